#include "why_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "link_matrix.h"
#include "network_bound.h"
#include "run_store_reader.h"
#include "slow_cause.h"
#include "slow_cause_text.h"

namespace ddpscope::apps {

std::function<int()> add_why_command(CLI::App& app, CLI::App** why) {
  struct Args {
    std::string run;
    bool json = false;
    int last = 0;
    int64_t until = -1;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "why", "Why the iterations are slow: the rank the others wait for, in which phase, and the time without it");
  cmd->add_option("RUN", a->run, "Run file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", a->json, "Print JSON: straggler {rank, phase, where, ...}, waits, what_if_ms, stalls");
  cmd->add_option("--last", a->last,
                  "Only the last N finished iterations (a running job: is a rank slow now?); 0: all past the first")
      ->check(CLI::Range(0, 1'000'000));
  cmd->add_option("--until", a->until,
                  "Only iterations up to N: the verdict as it stood then (with --last K: the K up to N)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 53));
  cmd->footer("Example:\n  ddpscope-cli why job.ddprun   (a running job's last 3 iterations: why --last 3 job.ddprun)");
  *why = cmd;
  return [a] {
    probes::RunStoreReader run(a->run);
    const probes::LinkReport links = probes::analyze_links(run);
    const probes::SlowCauses causes = probes::analyze_slow_causes(run, a->last, /*layers=*/true, &links, a->until);
    const probes::SlowCause& cause = a->last > 0 ? causes.recent : causes.whole;
    const auto network = probes::find_network_bound(run, links);
    if (a->json) {
      auto j = probes::slow_cause_json(cause);
      j["network_bound"] = network ? nlohmann::ordered_json{{"busbw_gbps", network->busbw_gbps},
                                                            {"ceiling_gbps", network->ceiling_gbps},
                                                            {"share", network->share()},
                                                            {"exposed_comm_ms", network->exposed_comm_ms},
                                                            {"best_cap_mb", network->best_cap_mb},
                                                            {"text", network->text}}
                                   : nlohmann::ordered_json();
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s", probes::slow_cause_text(cause).c_str());
      if (network) std::printf("\n%s\n", network->text.c_str());
    }
    return 0;
  };
}

}  // namespace ddpscope::apps
