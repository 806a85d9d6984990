// Which ranks of a job came, when, and how often: for jobs another launcher starts
// (`ddpscope-cli collect`), where ranks join one by one, some never, and torchrun's
// elastic restarts run the whole job again as a new attempt in the same run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::probes {

struct RankAttendance {
  int world_size = 0;    // as the run says (the launcher's, or `collect --expect`)
  bool running = false;  // the run is still being written: ranks may join yet
  // Ranks below world_size the run has nothing from: how many, and the first kListed of
  // them (a world size is what a launcher or trace claims: never one entry per rank).
  // Only for jobs whose ranks say their place (attempts) or a `collect` run: an imported
  // trace or dump set says what it lacks itself.
  int64_t never_joined_count = 0;
  std::vector<int> never_joined;
  static constexpr size_t kListed = 64;
  std::vector<AttemptRow> attempts;
  int attempts_run = 0;  // of the whole job: the highest attempt + 1 (0: no rank said its place)
  // Ranks that joined their attempt more than kLateJoinNs after its first rank, with how late.
  std::vector<std::pair<int, int64_t>> late;
};

// A rank this much after its attempt's first one has "joined late" (launchers start a
// node's ranks within a second or two of each other).
inline constexpr int64_t kLateJoinNs = 5'000'000'000;

RankAttendance rank_attendance(RunStoreReader& run);

// In plain words, for `hang` and the app: ranks that never joined, joined late, and the
// attempts a restarted job ran. Empty when there is nothing to say (every rank came, once).
std::vector<std::string> attendance_findings(const RankAttendance& attendance);

}  // namespace ddpscope::probes
