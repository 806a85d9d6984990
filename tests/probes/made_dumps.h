// Flight-recorder dumps written here from PyTorch's documented fields (version,
// pg_config, entries with record_id, pg_id, process_group, collective_seq_id, p2p_seq_id,
// op_id, profiling_name, input/output sizes and dtypes, state, time_*_ns, duration_ms,
// timeout_ms, frames), one file per rank named as PyTorch names them, and read back.
#pragma once

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "hang_analysis.h"
#include "scratch_test.h"

namespace ddpscope::probes::made_dumps {

using nlohmann::json;

struct Call {
  std::string op = "all_reduce";
  std::vector<int64_t> shape = {1024};
  std::string dtype = "Float";
  std::string state = "completed";
  std::string phase;  // ddpscope's field; PyTorch's dumps have none
  int iteration = -1;
};

// One rank's dump: its calls of group "0" in sequence order, from collective #0.
inline json torch_dump(int world, const std::vector<Call>& calls, int64_t t0 = 1'000'000'000) {
  std::string ranks = "[";
  for (int r = 0; r < world; ++r)
    ranks += (r ? ", " : "") + std::to_string(r);
  ranks += "]";
  json entries = json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const int64_t created = t0 + static_cast<int64_t>(i) * 1'000'000;
    json e = {{"record_id", i},
              {"pg_id", 0},
              {"process_group", {"0", "default_pg"}},
              {"collective_seq_id", i + 1},
              {"p2p_seq_id", 0},
              {"op_id", i + 1},
              {"profiling_name", "nccl:" + c.op},
              {"time_created_ns", created},
              {"input_sizes", {c.shape}},
              {"input_dtypes", {c.dtype}},
              {"output_sizes", {c.shape}},
              {"output_dtypes", {c.dtype}},
              {"state", c.state},
              {"time_discovered_started_ns", c.state == "scheduled" ? json(nullptr) : json(created + 1000)},
              {"time_discovered_completed_ns", c.state == "completed" ? json(created + 5000) : json(nullptr)},
              {"retired", c.state == "completed"},
              {"timeout_ms", 600000},
              {"is_p2p", false},
              {"duration_ms", c.state == "completed" ? json(0.004) : json(nullptr)},
              {"frames",
               {{{"name", "all_reduce"}, {"filename", "distributed_c10d.py"}, {"line", 2501}},
                {{"name", "forward"}, {"filename", "train.py"}, {"line", 42}}}}};
    if (!c.phase.empty()) e["phase"] = c.phase, e["iteration"] = c.iteration;
    entries.push_back(e);
  }
  return {{"version", "2.4"},
          {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", ranks}}}}},
          {"pg_status", {{"0", {{"last_enqueued_collective", calls.size()}}}}},
          {"entries", entries}};
}

// Five collectives every rank completed, then what the scenario makes of the sixth.
inline std::vector<Call> healthy(int n = 5) { return std::vector<Call>(static_cast<size_t>(n)); }

// A test that writes dumps into its scratch folder and analyzes them.
class FlightDumpTest : public ScratchTest {
 protected:
  // Writes nccl_trace_rank_<r> for every rank (calls_of(r)) and analyzes them.
  HangReport analyze(int world, const std::function<std::vector<Call>(int)>& calls_of,
                     std::vector<std::string>* files = nullptr) {
    std::vector<std::string> paths;
    for (int r = 0; r < world; ++r) {
      const std::string p = path(("nccl_trace_rank_" + std::to_string(r)).c_str());
      std::ofstream(p) << torch_dump(world, calls_of(r)).dump();
      paths.push_back(p);
    }
    if (files) *files = paths;
    return analyze_hang(read_flight_dumps(paths));
  }

  // Two ranks that both started collective #6 and never completed it, read back from
  // their dumps (the tests then say which rank's watchdog did what).
  FlightData both_waiting() {
    std::vector<std::string> files;
    analyze(
        2,
        [](int) {
          std::vector<Call> calls = healthy();
          calls.push_back({.state = "started"});
          return calls;
        },
        &files);
    return read_flight_dumps(files);
  }

  static const GroupFinding& finding(const HangReport& h) {
    if (h.flight.groups.empty()) throw std::runtime_error("no group");
    return h.flight.groups.front();
  }
};

}  // namespace ddpscope::probes::made_dumps
