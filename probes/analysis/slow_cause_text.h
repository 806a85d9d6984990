// The cause analysis (slow_cause.h) in words and as JSON: the verdict sentence every view
// shows, `ddpscope-cli why`'s table, and `why --json`'s document.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "slow_cause.h"

namespace ddpscope::probes {

// One paragraph: who gates the job, in which phase, who waits for it, the what-if; or that
// no rank stands out; or why there is no verdict.
std::string slow_cause_verdict(const SlowCause& cause);
// "Iteration 60: rank 1 stalled 30.0 s (outside_step); rank 0 waited in allreduce #328."
std::string slow_stall_sentence(const SlowStall& stall);
// The verdict, then each rank's waiting and the time lost to it, the stalls and what was
// left out.
std::string slow_cause_text(const SlowCause& cause);
nlohmann::ordered_json slow_cause_json(const SlowCause& cause);

}  // namespace ddpscope::probes
