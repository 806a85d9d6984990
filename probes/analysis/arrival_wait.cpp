#include "arrival_wait.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace ddpscope::probes {
namespace {

constexpr double kNsToMsWait = 1e-6;

// The parts of `a` that `b` covers (both merged).
std::vector<Interval> intersect_intervals(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  return subtract_intervals(a, subtract_intervals(a, b));
}

}  // namespace

void split_wait_and_transfer(RunAnalysis& analysis, int world_size) {
  std::set<int> ranks;
  for (const IterationAnalysis& it : analysis.iterations)
    ranks.insert(it.rank);
  // The last arrival at each bucket's allreduce, and how many ranks reduced it.
  struct Arrival {
    int64_t last = 0;
    size_t ranks = 0;
  };
  std::map<std::pair<int64_t, int>, Arrival> arrivals;                               // (iteration, bucket)
  std::map<std::pair<int, int64_t>, std::vector<const BucketTiming*>> by_iteration;  // (rank, iteration)
  for (const BucketTiming& b : analysis.buckets) {
    Arrival& a = arrivals[{b.iteration, b.bucket}];
    a.last = a.ranks == 0 ? b.start_ns : std::max(a.last, b.start_ns);
    ++a.ranks;
    by_iteration[{b.rank, b.iteration}].push_back(&b);
  }
  for (BucketTiming& b : analysis.buckets) {
    const Arrival& a = arrivals[{b.iteration, b.bucket}];
    const bool every_rank = ranks.size() >= 2 && a.ranks == ranks.size();
    b.last_arrival_ns = every_rank ? a.last : -1;
    b.group_ranks = every_rank ? std::max(static_cast<int>(a.ranks), world_size) : 0;
    b.every_arrival = static_cast<int>(a.ranks) >= world_size;
  }
  for (IterationAnalysis& it : analysis.iterations) {
    it.wait_known = false;
    it.exposed_wait_ms = 0;
    it.exposed_transfer_ms = it.exposed_comm_ms;
    const auto buckets = by_iteration.find({it.rank, it.iteration});
    if (ranks.size() < 2 || buckets == by_iteration.end()) continue;
    std::vector<Interval> waits;
    bool complete = true;
    for (const BucketTiming* b : buckets->second) {
      const Arrival& a = arrivals[{b->iteration, b->bucket}];
      if (a.ranks < ranks.size()) complete = false;
      if (a.last > b->start_ns) waits.push_back({b->start_ns, std::min(a.last, b->end_ns)});
    }
    if (!complete) continue;
    it.wait_known = true;
    it.exposed_wait_ms = total_length(intersect_intervals(it.exposed, merge_intervals(std::move(waits)))) * kNsToMsWait;
    it.exposed_transfer_ms = std::max(0.0, it.exposed_comm_ms - it.exposed_wait_ms);
  }
}

bool mostly_waits(double exposed_wait_ms, double exposed_comm_ms, double iteration_ms) {
  return exposed_wait_ms > 0.5 * exposed_comm_ms && exposed_wait_ms > 0.05 * iteration_ms;
}

}  // namespace ddpscope::probes
