#include "lesson_file.h"

#include "atomic_file.h"

#include "ddpscope/regular_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ddpscope/error.h"

namespace ddpscope::probes {

constexpr int64_t kMaxLessonBytes = 16 << 20;
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "ddpscope-lesson";
constexpr int kVersion = 1;
constexpr size_t kLongestText = 20000;  // a title, the words above, one step's narration

std::string text_field(const nlohmann::json& j, const char* key, const std::string& where, bool required) {
  if (!j.contains(key)) {
    if (required) throw DDPSCOPE_ERROR(where, ": no \"", key, "\"; a lesson file names its ", key);
    return {};
  }
  if (!j[key].is_string()) throw DDPSCOPE_ERROR(where, ": \"", key, "\" must be text");
  std::string s = j[key].get<std::string>();
  if (s.size() > kLongestText)
    throw DDPSCOPE_ERROR(where, ": \"", key, "\" is ", s.size(), " characters long; at most ", kLongestText);
  return s;
}

int step_number(const nlohmann::json& v, const std::string& where, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > 100'000'000)
    throw DDPSCOPE_ERROR(where, ": ", what, " must be a step number from 1 (as the Learn tab counts), not ",
                         v.dump().substr(0, 40));
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

// The fields, checked one by one; nlohmann's type errors are lesson_from_json's to say.
static LessonFile lesson_from_object(const nlohmann::json& j, const std::string& where);

LessonFile lesson_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    return lesson_from_object(j, where);
  } catch (const nlohmann::json::exception& e) {  // a field of another type ("format": 5)
    throw DDPSCOPE_ERROR(where, ": not a lesson file (", e.what(), ")");
  }
}

LessonFile lesson_from_object(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw DDPSCOPE_ERROR(where, ": not a lesson file (a JSON object is expected)");
  if (j.value("format", std::string()) != kFormat)
    throw DDPSCOPE_ERROR(where, ": not a lesson file (\"format\" must be \"", kFormat,
                         "\"); make one with ddpscope-cli lesson make RUN");
  if (!j.contains("version") || !j["version"].is_number_integer())
    throw DDPSCOPE_ERROR(where, ": \"version\" must be a whole number");
  if (j["version"].get<int64_t>() > kVersion)
    throw DDPSCOPE_ERROR(where, ": lesson file version ", j["version"].get<int64_t>(),
                         " is newer than this ddpscope reads (", kVersion, "); update ddpscope");
  LessonFile l;
  l.title = text_field(j, "title", where, true);
  l.run = text_field(j, "run", where, true);
  if (l.run.empty()) throw DDPSCOPE_ERROR(where, ": \"run\" is empty; it names the run file the lesson replays");
  l.about = text_field(j, "about", where, false);
  l.kind = text_field(j, "kind", where, false);
  if (!l.kind.empty() && l.kind != "autograd" && l.kind != "ddp" && l.kind != "ring")
    throw DDPSCOPE_ERROR(where, ": \"kind\" is \"", l.kind, "\"; it is \"autograd\", \"ddp\" or \"ring\"");
  if (j.contains("rank")) {
    if (!j["rank"].is_number_integer() || j["rank"].get<int64_t>() < 0 || j["rank"].get<int64_t>() > 1'000'000)
      throw DDPSCOPE_ERROR(where, ": \"rank\" must be a rank number (0 or more)");
    l.rank = static_cast<int>(j["rank"].get<int64_t>());
  }
  if (j.contains("stops")) {
    if (!j["stops"].is_array()) throw DDPSCOPE_ERROR(where, ": \"stops\" must be a list of step numbers");
    for (const auto& s : j["stops"])
      l.stops.push_back(step_number(s, where, "each of \"stops\""));
    std::sort(l.stops.begin(), l.stops.end());
    l.stops.erase(std::unique(l.stops.begin(), l.stops.end()), l.stops.end());
  }
  if (j.contains("narration")) {
    if (!j["narration"].is_object())
      throw DDPSCOPE_ERROR(where, ": \"narration\" must map step numbers to text, as {\"12\": \"...\"}");
    for (const auto& [key, value] : j["narration"].items()) {
      int step = 0;
      try {
        size_t used = 0;
        step = std::stoi(key, &used);
        if (used != key.size()) step = 0;
      } catch (const std::exception&) {
        step = 0;
      }
      if (step < 1) throw DDPSCOPE_ERROR(where, ": \"narration\" key \"", key, "\" is not a step number from 1");
      if (!value.is_string()) throw DDPSCOPE_ERROR(where, ": the narration of step ", step, " must be text");
      if (value.get<std::string>().size() > kLongestText)
        throw DDPSCOPE_ERROR(where, ": the narration of step ", step, " is longer than ", kLongestText, " characters");
      l.narration[step] = value.get<std::string>();
    }
  }
  return l;
}

nlohmann::json lesson_to_json(const LessonFile& l) {
  nlohmann::json j = {{"format", kFormat}, {"version", kVersion}, {"title", l.title}, {"run", l.run}};
  if (!l.kind.empty()) j["kind"] = l.kind;
  j["rank"] = l.rank;
  if (!l.about.empty()) j["about"] = l.about;
  j["stops"] = l.stops;
  nlohmann::json narration = nlohmann::json::object();
  for (const auto& [step, text] : l.narration)
    narration[std::to_string(step)] = text;
  j["narration"] = narration;
  return j;
}

LessonFile read_lesson_file(const std::string& path) {
  // A link or a classroom may name it: a pipe or /dev/zero is refused before it is opened.
  check_regular_file(path, "lesson file", kMaxLessonBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DDPSCOPE_ERROR("cannot open the lesson file '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > kMaxLessonBytes)
    throw DDPSCOPE_ERROR("'", path, "' is ", text.str().size() / (1024 * 1024), " MiB: not a lesson file");
  nlohmann::json j;
  try {
    // Refused as it is read: a tree 60,000 levels deep was built, then printed and freed
    // by recursion, out of stack. Lesson files nest 3 levels.
    constexpr int kMaxDepth = 64;
    j = nlohmann::json::parse(text.str(), [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxDepth)
        throw DDPSCOPE_ERROR("'", path, "' nests deeper than ", kMaxDepth, " levels: not a lesson file");
      return true;
    });
  } catch (const nlohmann::json::exception& e) {  // a parse error, or a number past a double (out_of_range)
    throw DDPSCOPE_ERROR("'", path, "' is not a lesson file: not JSON (", e.what(), ")");
  }
  return lesson_from_json(j, "'" + path + "'");
}

void write_lesson_file(const std::string& path, const LessonFile& lesson) {
  AtomicFile file(path, ".tmp");
  {
    std::ofstream out(file.partial(), std::ios::binary | std::ios::trunc);
    if (!out) throw DDPSCOPE_ERROR("cannot write the lesson file '", path, "': cannot create '", file.partial(), "'");
    out << lesson_to_json(lesson).dump(2) << "\n";
    if (!out.flush()) throw DDPSCOPE_ERROR("cannot write the lesson file '", path, "' (disk full?)");
  }
  file.commit();
}

std::string lesson_run_path(const std::string& lesson_path, const LessonFile& lesson) {
  const fs::path run(lesson.run);
  if (run.is_absolute()) return run.string();
  return (fs::absolute(fs::path(lesson_path)).parent_path() / run).lexically_normal().string();
}

}  // namespace ddpscope::probes
