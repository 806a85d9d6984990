// Writes a synthetic wide run for the Ranks tab's screenshot and by-hand checks:
// RANKS ranks (8 per host) x ITERATIONS iterations, rank SLOW 4 ms slower after the first.
//
//   build/tests/bench/make_wide_run OUT.ddprun [ranks] [iterations] [slow]
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "known_iterations_run.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_wide_run OUT.ddprun [ranks] [iterations] [slow rank]\n");
    return 2;
  }
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 1024;
  const int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
  const int slow = argc > 4 ? std::atoi(argv[4]) : 517;
  std::filesystem::remove(argv[1]);
  ddpscope::testing::write_many_ranks(argv[1], ranks, iterations, slow, 8);
  std::printf("%s: %d ranks x %d iterations, rank %d slow\n", argv[1], ranks, iterations, slow);
  return 0;
}
