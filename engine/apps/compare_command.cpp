#include "compare_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <optional>

#include "ddpscope/error.h"
#include "run_compare.h"
#include "slow_cause.h"
#include "slow_cause_text.h"

namespace ddpscope::apps {
namespace {

// "FIRST:LAST" (either may be empty: from the default) as an iteration range.
ddpscope::probes::IterationRange parse_iterations(const std::string& text, const char* option) {
  ddpscope::probes::IterationRange r;
  if (text.empty()) return r;
  const size_t colon = text.find(':');
  auto number = [&](const std::string& part) -> int64_t {
    if (part.empty()) return -1;
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != part.size() || v < 0)
      throw DDPSCOPE_ERROR(option, " '", text,
                           "': give FIRST:LAST iteration numbers, as 5:20 (either may be left out)");
    return v;
  };
  r.first = number(text.substr(0, colon));
  r.last = colon == std::string::npos ? r.first : number(text.substr(colon + 1));
  if (r.first >= 0 && r.last >= 0 && r.last < r.first)
    throw DDPSCOPE_ERROR(option, " '", text, "': the last iteration comes before the first");
  return r;
}

// `compare --fail-above PCT`: 1 when B's mean iteration is more than PCT % slower than A's,
// said in one line either way (on stderr when stdout carries JSON).
int regression_gate(const ddpscope::probes::RunComparison& c, double pct, FILE* out) {
  const double a = c.a.iteration_ms, b = c.b.iteration_ms;
  const double slower_pct = a > 0 ? 100.0 * (b - a) / a : 0.0;
  const bool failed = slower_pct > pct;
  std::fprintf(out,
               "\n%s: B's mean iteration is %.2f ms against A's %.2f ms (%+.1f%%), %s the --fail-above %g%% gate\n",
               failed ? "REGRESSION" : "ok", b, a, slower_pct, failed ? "above" : "within", pct);
  return failed ? 1 : 0;
}

}  // namespace

std::function<int()> add_compare_command(CLI::App& app, CLI::App** compare) {
  struct Args {
    std::string a, b, iterations, iterations_b;
    size_t ops = 20;
    bool json = false;
    std::optional<double> fail_above;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare two runs: where their iteration time went, and the ops that appeared, disappeared, got "
      "slower or faster");
  cmd->add_option("A", args->a, "The run to compare against (before)")->required()->check(CLI::ExistingFile);
  cmd->add_option("B", args->b, "The run compared (after)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--iterations", args->iterations,
                  "FIRST:LAST iterations to compare (default: all but the first, the warm-up)");
  cmd->add_option("--iterations-b", args->iterations_b, "B's iterations, when they differ from --iterations");
  cmd->add_option("--ops", args->ops, "Ops to list (largest change first)")->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--json", args->json, "Print JSON (every op)");
  cmd->add_option("--fail-above", args->fail_above,
                  "Exit 1 when B's mean iteration is more than PCT % slower than A's (a regression gate for CI)")
      ->option_text("PCT")
      ->check(CLI::Range(0.0, 1e6));
  *compare = cmd;
  return [args] {
    const auto range_a = parse_iterations(args->iterations, "--iterations");
    const auto range_b = args->iterations_b.empty() ? range_a : parse_iterations(args->iterations_b, "--iterations-b");
    ddpscope::probes::RunStoreReader a(args->a), b(args->b);
    const auto c = ddpscope::probes::compare_runs(a, b, range_a, range_b);
    // Each run's cause (slow_cause.h): a change in who the job waits for, or why, is often
    // the regression's answer.
    const auto why_a = ddpscope::probes::analyze_slow_cause(a), why_b = ddpscope::probes::analyze_slow_cause(b);
    if (args->json) {
      auto j = ddpscope::probes::comparison_json(c);
      j["why"] = {{"a", ddpscope::probes::slow_cause_json(why_a)}, {"b", ddpscope::probes::slow_cause_json(why_b)}};
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s", ddpscope::probes::comparison_text(c, args->ops).c_str());
      std::printf("\nWhy, A: %s\nWhy, B: %s\n", ddpscope::probes::slow_cause_verdict(why_a).c_str(),
                  ddpscope::probes::slow_cause_verdict(why_b).c_str());
    }
    return args->fail_above ? regression_gate(c, *args->fail_above, args->json ? stderr : stdout) : 0;
  };
}

}  // namespace ddpscope::apps
