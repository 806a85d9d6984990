#include "why_command.h"

#include <cstdio>
#include <memory>
#include <string>

#include "run_store_reader.h"
#include "slow_cause.h"
#include "slow_cause_text.h"

namespace ddpscope::apps {

std::function<int()> add_why_command(CLI::App& app, CLI::App** why) {
  struct Args {
    std::string run;
    bool json = false;
    int last = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "why", "Why the iterations are slow: the rank the others wait for, in which phase, and the time without it");
  cmd->add_option("RUN", a->run, "Run file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", a->json, "Print JSON: straggler {rank, phase, where, ...}, waits, what_if_ms, stalls");
  cmd->add_option("--last", a->last,
                  "Only the last N finished iterations (a running job: is a rank slow now?); 0: all past the first")
      ->check(CLI::Range(0, 1'000'000));
  cmd->footer("Example:\n  ddpscope-cli why job.ddprun   (a running job's last 3 iterations: why --last 3 job.ddprun)");
  *why = cmd;
  return [a] {
    probes::RunStoreReader run(a->run);
    const probes::SlowCause cause =
        a->last > 0 ? probes::analyze_slow_causes(run, a->last).recent : probes::analyze_slow_cause(run);
    if (a->json)
      std::printf("%s\n", probes::slow_cause_json(cause).dump(2).c_str());
    else
      std::printf("%s", probes::slow_cause_text(cause).c_str());
    return 0;
  };
}

}  // namespace ddpscope::apps
