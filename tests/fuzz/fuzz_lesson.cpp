// libFuzzer harness of what a teacher, a chat or a web page can hand a student's app: a
// lesson file (read as the app reads one) and a ddpscope: link (parsed as the app parses
// one before it opens anything). Bad ones must be refused with an error, never a crash;
// a parsed link's numbers must be finite and in range.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "ddpscope/error.h"
#include "lesson_file.h"
#include "lesson_link.h"
#include "fuzz_scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ddpscope::fuzz::ScratchFile scratch("lesson", ".ddplesson");
  const std::string& path = scratch.path();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    (void)ddpscope::probes::read_lesson_file(path);
  } catch (const ddpscope::Error&) {
  }
  QString error;
  const auto link = ddpscope::gui::LessonLink::parse(
      QString::fromUtf8(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size)), 6, &error);
  if (link && (!std::isfinite(link->zoom) || link->zoom < 0 || link->step < 0)) __builtin_trap();
  return 0;
}
