// The ranks of a collected job as the Collect dialog lists them: where each runs (host,
// local rank, node), its attempt, and how it stands (running, ended, failed, late, never
// joined). Plain Qt Core over RunData, so tests check it without a window.
#pragma once

#include <QString>
#include <vector>

#include "run_data.h"

namespace ddpscope::gui {

struct JobRankRow {
  int rank = 0;
  QString host;
  int localRank = -1, node = -1;  // -1: the launcher said none
  int attempt = 0;                // its latest, from 1 (0: it never joined)
  QString state;                  // "running", "ended", "failed", "never joined", "not joined yet", ...
};

// One row per rank that came, and per rank that never did (the first
// RankAttendance::kListed of those), by rank.
std::vector<JobRankRow> jobRanks(const RunData& run);

}  // namespace ddpscope::gui
