// The collective a rank's failure ended, typed by the rank itself: its error event says
// it (job_events.h), the run file keeps it (schema 16: runs.failed_op, failed_seq,
// failed_timed_out; a PyTorch rank's collective_failed instant), so that no reader decides
// from the words of an error, which may be in any language or garbled (the fault suite
// replaces them).
#pragma once

#include <cstdint>
#include <string>

namespace ddpscope::probes {

struct FailedCollective {
  std::string op;          // "allreduce", "broadcast (group g)"
  int64_t seq = -1;        // its number in its group
  bool timed_out = false;  // its wait ran out of time; else it failed otherwise (a peer gone)
  bool known() const { return seq >= 0 && !op.empty(); }
};

}  // namespace ddpscope::probes
