// `hang --ask RUN`: where every rank's code stands now, asked of a running job. The job's
// launcher (the process holding the run file's claim) gets SIGUSR2 and passes the ask on
// through its collector to every rank, whose watcher takes all its threads' stacks into the
// run (probes/runtime/stall_watcher.h, the Python ranks' _stacks.py); this waits for them.
#pragma once

#include <chrono>
#include <string>

namespace ddpscope::apps {

struct StacksAnswer {
  int asked = 0;     // the ranks of the run
  int answered = 0;  // those that took a stack since the ask
  double seconds = 0;
};

// Asks the job recording `run_file` and waits up to `limit` for every rank's stack. Throws
// Error, saying why and what to do, when the run has ended or no ddpscope launcher on this
// host holds it (run_file_claim.h).
StacksAnswer ask_for_stacks(const std::string& run_file, std::chrono::milliseconds limit = std::chrono::seconds(5));

}  // namespace ddpscope::apps
