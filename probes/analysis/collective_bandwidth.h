// Bandwidth per collective: the bytes each collective moved and how fast, timed
// from the last rank's arrival, so that waiting for a late rank is never read as a slow
// network. Two figures, as nccl-tests gives them:
//   algorithm bandwidth = bytes / transfer time
//   bus bandwidth       = algorithm bandwidth x the op's factor for a group of n ranks:
//                         allreduce 2(n-1)/n; all_gather and reduce_scatter (n-1)/n;
//                         broadcast, reduce, send and recv 1.
// Bus bandwidth is what a link carries, so groups of any size compare with a link's rate.
// Rates are in GB/s (10^9 bytes a second).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "overlap_analysis.h"
#include "run_store_reader.h"
#include "slow_cause_timeline.h"

namespace ddpscope::probes {

// The op's bus factor for a group of `ranks`; 0 for an op that moves no data (barrier) or
// one this does not know.
double bus_factor(std::string_view op, int ranks);

struct TransferRate {
  double transfer_ms = 0;  // from the last arrival to this rank's end
  double algbw_gbps = 0, busbw_gbps = 0;
};

// "2.41 GB/s", "386 MB/s", "12.5 MB/s", "850 kB/s": three significant digits, the unit
// following the size (decimal units, as link rates are given).
std::string rate_text(double gbps);

// A rate from bytes and a transfer time; none when the time is not positive (a rank that
// ended before the last one arrived: clocks of two hosts out of step).
std::optional<TransferRate> transfer_rate(std::string_view op, int64_t bytes, int ranks, int64_t transfer_ns);

// A DDP bucket's allreduce on one rank, once every rank reduced it (split_wait_and_transfer
// sets its last arrival).
std::optional<TransferRate> bucket_rate(const BucketTiming& b);

// Bus bandwidth over several bucket allreduces (of BandwidthReport::kMinBytes or more):
// bus bytes over transfer time, so the large ones weigh as they do in the job's time.
struct BucketBusTotals {
  double bus_bytes = 0, transfer_ms = 0;
  void add(const BucketTiming& b);
  double gbps() const;  // NaN: none added
};

struct CollectiveRate {
  int rank = 0;
  int64_t seq = 0, iteration = -1;
  std::string op;
  int64_t bytes = 0;
  int ranks = 0;  // in its group
  int64_t last_arrival_ns = 0, end_ns = 0;
  TransferRate rate;
};

struct RankRate {
  int rank = 0;
  int collectives = 0;  // of at least kMinBytes, with a rate
  int64_t bytes = 0;
  double transfer_ms = 0;
  // Bus bytes over transfer time, summed over its collectives: large ones weigh more, as
  // they do in the job's time. And the median collective's bus bandwidth.
  double busbw_gbps = 0, median_busbw_gbps = 0;
};

struct BucketRate {
  int bucket = 0;
  int64_t bytes = 0;
  int samples = 0;  // (rank, iteration) pairs with a rate
  double median_transfer_ms = 0, median_busbw_gbps = 0;
  // The median share of its transfer spent while backward still computed (before
  // finalize): an allreduce there shares the rank's cores, or the GPU, with backward, and
  // its rate says what it got of them beside it, not what the link carries.
  double median_beside_backward = 0;
};

struct BandwidthReport {
  // Smaller collectives are timed by their latency, not the link's rate: listed, left out
  // of the per-rank figures and the reference.
  static constexpr int64_t kMinBytes = 64 * 1024;
  std::vector<CollectiveRate> collectives;  // every matched collective on every rank, by time
  std::vector<RankRate> ranks;              // by rank
  std::vector<BucketRate> buckets;          // by bucket
  // The reference a collective's rate is read against: the ring's measured ceiling (its
  // slowest link between neighbouring ranks, train --measure-links; link_matrix.h), or while
  // no link was measured the run's own 95th percentile of bus bandwidth (of collectives of
  // kMinBytes or more).
  double reference_busbw_gbps = 0;
  bool reference_measured = false;
  int without_rate = 0;  // collectives whose transfer time was not positive
  // The job's ranks and those the run holds: fewer (traces of some ranks of a larger job)
  // and the last arrival is only the last of those recorded, every rate a lower bound.
  int group_ranks = 0, ranks_recorded = 0;
  bool lower_bound() const { return ranks_recorded < group_ranks; }
};

// `world_size`: the job's ranks (the groups' size where the run holds fewer).
BandwidthReport analyze_bandwidth(const RunTimelines& timelines, const std::vector<std::string>& names,
                                  const RunAnalysis& analysis, int world_size);
// The same from a run file, read against the links' measured ceiling when it has one.
BandwidthReport analyze_bandwidth(RunStoreReader& run);
// Makes the ring's measured ceiling (train --measure-links) the report's reference, when the
// run has one.
void use_measured_ceiling(BandwidthReport& report, RunStoreReader& run);

}  // namespace ddpscope::probes
