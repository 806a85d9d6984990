#include "stacks_request.h"

#include <set>
#include <thread>

#include "ddpscope/error.h"
#include "probe.h"
#include "run_file_claim.h"
#include "run_store_reader.h"

namespace ddpscope::apps {
namespace {

// Ranks with a stack taken at or after `since_ns` (the run's clock).
int ranks_with_stacks_since(const std::string& run_file, int64_t since_ns) {
  probes::RunStoreReader run(run_file);
  std::set<int> ranks;
  for (const auto& c : run.stacks())
    if (c.t_ns >= since_ns) ranks.insert(c.rank);
  return static_cast<int>(ranks.size());
}

}  // namespace

StacksAnswer ask_for_stacks(const std::string& run_file, std::chrono::milliseconds limit) {
  probes::RunStoreReader run(run_file);
  if (run.run().status != "running")
    throw DDPSCOPE_ERROR("'", run_file, "' is not being recorded (its job ", run.run().status,
                         "): only a running job can be asked for its stacks; `hang ", run_file,
                         "` shows the stacks its ranks took");
  StacksAnswer answer;
  answer.asked = static_cast<int>(run.ranks().size());
  // The run's clock is this host's CLOCK_MONOTONIC (its collector runs beside the launcher).
  const int64_t asked_ns = probes::now_ns();
  probes::ask_run_holder_for_stacks(run_file);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    answer.answered = ranks_with_stacks_since(run_file, asked_ns);
    if (answer.answered >= answer.asked) break;
  }
  answer.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return answer;
}

}  // namespace ddpscope::apps
