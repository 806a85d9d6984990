// Network-bound: when the links were measured, none is slow, and the job's
// collectives run near the links' ceiling, the network itself is the limit: said with the
// share of the ceiling, the iteration's exposed communication, and what `advise` predicts
// a better bucket cap would gain (the rest is the network's).
#pragma once

#include <optional>
#include <string>

#include "collective_bandwidth.h"
#include "link_matrix.h"
#include "overlap_analysis.h"
#include "run_store_reader.h"

namespace ddpscope::probes {

struct NetworkBound {
  static constexpr double kNearCeiling = 0.7;    // of the ring's measured ceiling
  double busbw_gbps = 0;                         // the median rank's median collective
  double ceiling_gbps = 0;                       // the ring's measured ceiling
  double iteration_ms = 0, exposed_comm_ms = 0;  // means over ranks' iterations past warm-up
  double best_cap_mb = 0, best_cap_iteration_ms = 0, recorded_iteration_ms = 0;  // advise's; 0: none
  std::string setting;  // how to choose that cap ("train --bucket-cap-mb 4")
  std::string text;
  double share() const { return ceiling_gbps > 0 ? busbw_gbps / ceiling_gbps : 0; }
};

// None when the links were not measured, one is slow, the collectives run below
// kNearCeiling of the ceiling, or the run has too few collectives to tell.
std::optional<NetworkBound> find_network_bound(RunStoreReader& run, const LinkReport& links,
                                               const BandwidthReport& bandwidth, const RunAnalysis& analysis);
// The same from the run alone: its timelines and iterations are read only when its links
// were measured and none is slow.
std::optional<NetworkBound> find_network_bound(RunStoreReader& run, const LinkReport& links);

}  // namespace ddpscope::probes
