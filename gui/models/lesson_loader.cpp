#include "lesson_loader.h"

#include <filesystem>

#include "ddp_lesson.h"
#include "graph_data.h"
#include "ring_lesson.h"

namespace ddpscope::gui {

Lesson load_run_lesson(probes::RunStoreReader& run, bool ddp, int rank, std::string& why_none) {
  const std::string name = std::filesystem::path(run.path()).filename().string();
  const auto graphs = list_dist_graphs(run);
  const bool ring = !run.spans({.kinds = {probes::Kind::RingStep}, .limit = 1}).empty() && graphs.empty() &&
                    run.spans({.kinds = {probes::Kind::GradReady}, .limit = 1}).empty();
  Lesson lesson;
  if (ring) {
    lesson = load_ring_lesson(run);
  } else if (ddp) {
    lesson = load_ddp_lesson(run, rank);
  } else if (graphs.empty()) {
    why_none =
        name + " holds no distributed autograd pass to replay (run an example, or a job with --remote-embedding)";
    return lesson;
  } else {
    lesson = load_lesson(run, graphs.front().ctx_id, graphs.front().pass);
  }
  if (lesson.steps.empty())
    why_none = ddp ? name + " recorded no DDP iteration on rank " + std::to_string(rank) + " to replay"
                   : name + " recorded no events of its context to replay";
  return lesson;
}

}  // namespace ddpscope::gui
