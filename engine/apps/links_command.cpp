#include "links_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "link_matrix.h"
#include "link_matrix_text.h"
#include "network_bound.h"
#include "run_store_reader.h"

namespace ddpscope::apps {

std::function<int()> add_links_command(CLI::App& app, CLI::App** links) {
  struct Args {
    std::string run;
    bool json = false, all = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "links", "Bytes and rates between each pair of ranks and hosts, their measured ceiling, and the slow link");
  cmd->add_option("RUN", a->run, "Run file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", a->json, "Print JSON: links [{src, dst, bytes, achieved_gbps, measured_gbps}], slow, ...");
  cmd->add_flag("--all", a->all, "List every pair of ranks (the table stops at 48)");
  cmd->footer(
      "Example:\n  ddpscope-cli train --np 4 --measure-links --out job.ddprun && ddpscope-cli links job.ddprun");
  *links = cmd;
  return [a] {
    probes::RunStoreReader run(a->run);
    const probes::LinkReport report = probes::analyze_links(run);
    const auto network = probes::find_network_bound(run, report);
    if (a->json) {
      auto j = probes::link_report_json(report);
      j["network_bound"] = network ? nlohmann::json(network->text) : nlohmann::json();
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s", probes::link_report_text(report, a->all ? 0 : 48).c_str());
      if (network) std::printf("\n%s\n", network->text.c_str());
    }
    return 0;
  };
}

}  // namespace ddpscope::apps
