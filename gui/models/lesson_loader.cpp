#include "lesson_loader.h"

#include <filesystem>

#include "lesson_kind.h"

namespace ddpscope::gui {

Lesson loadRunLesson(probes::RunStoreReader& run, const std::string& kind_name, int rank, std::string& why_none) {
  const std::string name = std::filesystem::path(run.path()).filename().string();
  const LessonKind* kind = nullptr;
  if (!kind_name.empty()) {
    kind = lessonKindNamed(kind_name);
    if (!kind) {
      why_none = "\"" + kind_name.substr(0, 40) + "\" is no kind of lesson (autograd, ddp or ring)";
      return {};
    }
  } else {
    for (const LessonKind* k : lessonKinds())
      if (k->foundIn(run)) {
        kind = k;
        break;
      }
  }
  if (!kind) {
    why_none = name +
               " holds no lesson to replay: no distributed autograd pass, DDP iteration or ring allreduce (run an "
               "example, or a job with --remote-embedding)";
    return {};
  }
  Lesson lesson = kind->load(run, rank);
  if (lesson.steps.empty())
    why_none = kind == &ddpLessonKind()
                   ? name + " recorded no DDP iteration on rank " + std::to_string(rank) + " to replay"
                   : name + " recorded no events of its " + kind->name() + " lesson to replay";
  return lesson;
}

}  // namespace ddpscope::gui
