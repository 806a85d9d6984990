// A lesson as a file a teacher makes from a run of their own and shares: a small JSON file
// (*.ddplesson) beside the run file it replays, naming the run, its title, the words shown
// above it, the steps where Play stops, and the explanation of any step replaced by the
// teacher's own. `ddpscope-cli lesson make` writes one; the app's Learn tab opens one.
//
//   {"format": "ddpscope-lesson", "version": 1, "title": "...", "run": "job.ddprun",
//    "kind": "ddp", "rank": 0, "about": "...", "stops": [12, 30],
//    "narration": {"12": "Bucket 0 is full: ..."}}
//
// "run" is relative to the lesson file's folder (the folder travels whole), or absolute.
// Steps are counted from 1, as the Learn tab shows them ("Step 12 of 72").
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddpscope::probes {

struct LessonFile {
  std::string title;
  std::string run;  // as written in the file
  // "autograd" (a distributed autograd pass), "ddp" (a rank's DDP iterations) or "ring"
  // (a ring allreduce's steps)
  std::string kind;
  int rank = 0;  // a DDP lesson's rank
  std::string about;
  std::vector<int> stops;                // ascending, each >= 1
  std::map<int, std::string> narration;  // step (>= 1) -> the words shown for it

  bool operator==(const LessonFile&) const = default;
};

inline constexpr const char* kLessonFileSuffix = ".ddplesson";

// Throws ddpscope::Error naming the file and what is wrong in it (not JSON, another
// format or a newer version, a field of the wrong type, a step below 1, ...).
LessonFile read_lesson_file(const std::string& path);
LessonFile lesson_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json lesson_to_json(const LessonFile& lesson);
// Writes atomically (a temporary file renamed over); throws ddpscope::Error when it cannot.
void write_lesson_file(const std::string& path, const LessonFile& lesson);
// The run file the lesson at `lesson_path` replays (its "run" resolved against the lesson
// file's folder).
std::string lesson_run_path(const std::string& lesson_path, const LessonFile& lesson);

}  // namespace ddpscope::probes
