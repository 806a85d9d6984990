#include "launcher_outcome.h"

#include <nlohmann/json.hpp>

#include "json_number.h"

namespace ddpscope::probes {

std::string outcome_line(const LauncherOutcome& outcome) {
  const RunEnd& end = outcome.end;
  nlohmann::json line{{"status", end.status},
                      {"message", end.message},
                      {"failed_rank", end.failed_rank},
                      {"dead_rank", end.dead_rank},
                      {"dead_signal", end.dead_signal}};
  if (end.failed.known()) {
    line["failed_op"] = end.failed.op;
    line["failed_seq"] = end.failed.seq;
    line["failed_timed_out"] = end.failed.timed_out;
  }
  for (const auto& [rank, state] : outcome.rank_states)
    line["rank_states"][std::to_string(rank)] = state;
  return line.dump() + "\n";
}

LauncherOutcome outcome_of(const nlohmann::json& line) {
  LauncherOutcome outcome;
  if (!line.is_object()) return outcome;
  RunEnd& end = outcome.end;
  end.status = json_value<std::string>(line, "status", "finished");
  end.message = json_value<std::string>(line, "message", "");
  end.failed_rank = json_value<int>(line, "failed_rank", -1);
  end.dead_rank = json_value<int>(line, "dead_rank", -1);
  end.dead_signal = json_value<std::string>(line, "dead_signal", "");
  end.failed = {json_value<std::string>(line, "failed_op", ""), json_value<int64_t>(line, "failed_seq", -1),
                json_value<bool>(line, "failed_timed_out", false)};
  const auto states = line.find("rank_states");
  if (states == line.end() || !states->is_object()) return outcome;
  for (const auto& [rank, state] : states->items())
    if (state.is_string() && !rank.empty() && rank.size() < 10 &&
        rank.find_first_not_of("0123456789") == std::string::npos)
      outcome.rank_states[std::stoi(rank)] = state.get<std::string>().substr(0, 8);
  return outcome;
}

}  // namespace ddpscope::probes
