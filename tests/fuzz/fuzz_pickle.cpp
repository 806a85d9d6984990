// libFuzzer harness of the pickle reader (probes/store/pickle_reader.h): the input is written as
// a file and read with the root's "entries" streamed, then replayed, as a flight-recorder
// dump is read. Anything but plain data, damage, depth or size must give a PickleError
// (or TraceFileError from the stream), never a crash, a hang or unbounded memory.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "pickle_reader.h"
#include "fuzz_scratch_file.h"

namespace {

// Counts events; stops the read once told to, as a builder does on an error.
class CountingSink final : public ddpscope::probes::SaxSink {
 public:
  long events = 0;
  bool tick() { return ++events < 10'000'000; }
  bool Null() override { return tick(); }
  bool Bool(bool) override { return tick(); }
  bool Int64(int64_t) override { return tick(); }
  bool Uint64(uint64_t) override { return tick(); }
  bool Double(double) override { return tick(); }
  bool String(std::string_view) override { return tick(); }
  bool Key(std::string_view) override { return tick(); }
  bool StartObject() override { return tick(); }
  bool EndObject() override { return tick(); }
  bool StartArray() override { return tick(); }
  bool EndArray() override { return tick(); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ddpscope::fuzz::ScratchFile scratch("pickle");
  const std::string& path = scratch.path();
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  try {
    ddpscope::probes::GzStream in(path, "pickle");
    CountingSink sink;
    ddpscope::probes::PickleReader reader(in);
    reader.stream_root_list("entries", [&](const ddpscope::probes::PickleValue& v) { return replay(v, sink); });
    const ddpscope::probes::PickleValue root = reader.read();
    (void)replay(root, sink);
  } catch (const ddpscope::Error&) {
  }
  return 0;
}
