// How a run ended: the outcome its runs row keeps. RunStoreWriter::end_run writes it;
// RunStoreReader::run() reads it back in RunRow.
#pragma once

#include <string>

#include "failed_collective.h"

namespace ddpscope::probes {

struct RunEnd {
  std::string status = "finished";  // finished | failed | stopped | incomplete
  std::string message;
  int failed_rank = -1;     // the rank that reported the failure; -1: none named
  int dead_rank = -1;       // a rank the launcher saw die by a signal; -1: none
  std::string dead_signal;  // "signal 9 (Killed)"
  FailedCollective failed;  // what failed_rank's failure ended; unknown when not a collective's
};

}  // namespace ddpscope::probes
