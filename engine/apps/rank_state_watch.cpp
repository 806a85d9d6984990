#include "rank_state_watch.h"

#include "hang_processes.h"

namespace ddpscope::apps {

void RankStateWatch::poll(WatchdogClock::time_point now) {
  if (frozen_ || now < next_look_) return;
  next_look_ = now + std::chrono::milliseconds(500);
  look();
}

void RankStateWatch::freeze() {
  if (frozen_) return;
  look(/*last=*/true);
  frozen_ = true;
}

void RankStateWatch::look(bool last) {
  if (static_cast<int>(ranks_.size()) < world_size_) {
    try {
      probes::RunStoreReader run(run_file_);
      ranks_ = run.ranks();
    } catch (const std::exception&) {
      return;  // not created yet: the collector makes it as the ranks join
    }
  }
  const auto stopped = [](const std::string& s) { return s == "T" || s == "t"; };
  for (const auto& [rank, state] : probes::rank_process_states(ranks_)) {
    if (state == 0 || state == 'Z') continue;
    std::string& seen = states_[rank];
    if (last && stopped(seen) && !stopped(std::string(1, state))) continue;  // continued to be ended
    seen = std::string(1, state);
  }
}

}  // namespace ddpscope::apps
