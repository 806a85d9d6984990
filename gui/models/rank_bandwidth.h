// Each rank's bus bandwidth over the run: its DDP bucket allreduces of 64 KiB or
// more, bus bytes over the time from the last rank's arrival to its end, past its first
// iteration when it has three or more and outside the iterations left out (stalls). The
// Summary's rank table and the Ranks tab's headline show it; the Overlap tab gives it per
// iteration.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "collective_bandwidth.h"

namespace ddpscope::gui {

struct RunData;

std::map<int, probes::BucketBusTotals> busByRank(const RunData& run, const std::set<int64_t>& leaveOut = {});

// One sentence over the ranks: the lowest rank's and the median's, with the links' measured
// ceiling when there is one ("Bus bandwidth in bucket allreduces: lowest rank 2 at 120 MB/s,
// median 233 MB/s; the links' measured ceiling is 1.87 Gbit/s."); empty without any.
std::string rankBandwidthSentence(const RunData& run);

}  // namespace ddpscope::gui
