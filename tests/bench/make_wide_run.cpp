// Writes a synthetic wide run for the Ranks tab's screenshot and by-hand checks:
// RANKS ranks (8 per host) x ITERATIONS iterations, rank SLOW 4 ms slower after the first.
//
//   build/tests/bench/make_wide_run OUT.ddprun [--ranks N] [--iterations N] [--slow RANK]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "known_iterations_run.h"

int main(int argc, char** argv) {
  CLI::App app{"Writes a synthetic run of many ranks, one of them slow, for the Ranks tab"};
  std::string out;
  int ranks = 1024, iterations = 20, slow = 517;
  app.add_option("out", out, "The run file to write (.ddprun)")->required();
  app.add_option("--ranks", ranks, "Ranks, 8 per host")->check(CLI::Range(1, 1 << 20));
  app.add_option("--iterations", iterations, "Iterations per rank")->check(CLI::Range(1, 1 << 20));
  app.add_option("--slow", slow, "The rank that is 4 ms slower after the first iteration")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  const std::filesystem::path path(out);
  if (path.extension() != ".ddprun") {
    std::fprintf(stderr, "make_wide_run: '%s' does not end in .ddprun; name the run file to write\n", out.c_str());
    return 2;
  }
  if (slow >= ranks) {
    std::fprintf(stderr, "make_wide_run: --slow %d is not one of the %d ranks\n", slow, ranks);
    return 2;
  }
  std::filesystem::remove(path);  // a run file of an earlier call
  ddpscope::testing::write_many_ranks(out, ranks, iterations, slow, 8);
  std::printf("%s: %d ranks x %d iterations, rank %d slow\n", out.c_str(), ranks, iterations, slow);
  return 0;
}
