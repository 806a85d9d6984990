// The line the launcher sends the collector on its stdin when a job ends (one JSON
// object), spelled here only: the launcher writes it, the collector reads it.
//   {"status":"failed","message":"...","failed_rank":1,"dead_rank":1,"dead_signal":"signal 9 (Killed)",
//    "failed_op":"allreduce","failed_seq":1454,"failed_timed_out":true,"rank_states":{"1":"T"}}
// Before it, {"request":"graph"} or {"request":"stacks"} asks the ranks for their next
// iteration's autograd graph or their stacks now.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "run_end.h"

namespace ddpscope::probes {

struct LauncherOutcome {
  RunEnd end;
  // Each rank's process when the launcher ended the job: a /proc state letter or "gone".
  std::map<int, std::string> rank_states;
};

std::string outcome_line(const LauncherOutcome& outcome);  // with its newline
// What the line says; fields it lacks or has of the wrong type keep their defaults.
LauncherOutcome outcome_of(const nlohmann::json& line);

}  // namespace ddpscope::probes
