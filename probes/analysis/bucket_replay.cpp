#include "bucket_replay.h"

#include <algorithm>
#include <limits>

#include "ddpscope/bucket_rule.h"

namespace ddpscope::probes {

double time_beside(double begin, double end, const std::vector<std::pair<double, double>>& spans) {
  double beside = 0;
  for (const auto& [b, e] : spans)
    beside += std::max(0.0, std::min(end, e) - std::max(begin, b));
  return std::clamp(beside, 0.0, std::max(0.0, end - begin));
}

namespace {

struct Bucket {
  size_t first = 0, last = 0;  // gradients, in ready order
  int64_t bytes = 0;
  double work = 0;  // its allreduce, in ns with nothing beside it
};

struct Timeline {
  double compute_end = 0;
  std::vector<std::pair<double, double>> allreduces;  // (start, end) per bucket
};

// The training thread computes backward gap by gap while the communication worker runs
// one allreduce at a time, in bucket order, each starting once its gradients are ready on
// every rank and the previous one is done (plus the dispatch delay). Time advances to the
// next thing that happens: a gap's compute done, an allreduce done, an allreduce's start.
Timeline replay(const IterationInputs& in, const AllreduceCost& cost, const std::vector<Bucket>& buckets) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  const size_t n = in.ready.size();
  const auto work_of = [&](size_t gap) { return gap < n ? in.ready[gap].work : in.tail_work; };
  std::vector<double> everywhere(n, 0);  // each gradient's replayed time on the last rank to have it
  Timeline out;
  double t = 0, left = work_of(0), comm_left = 0, started = 0, free_at = 0;
  size_t gap = 0, next = 0;  // the gap being computed (n: the tail), the next bucket to run
  bool computing = true, running = false;
  while (computing || running || next < buckets.size()) {
    double start_at = kNever;
    if (!running && next < buckets.size() && gap > buckets[next].last) {
      double ready = 0;
      for (size_t i = buckets[next].first; i <= buckets[next].last; ++i)
        ready = std::max(ready, everywhere[i]);
      start_at = std::max(ready, free_at) + cost.dispatch_ns;
      if (start_at <= t) running = true, started = t, comm_left = buckets[next].work, start_at = kNever;
    }
    const double compute_rate = running ? cost.compute_rate_beside_comm : 1;
    const double comm_rate = computing ? cost.compute_slowdown : 1;
    const double to_compute = computing ? left / compute_rate : kNever;
    const double to_comm = running ? comm_left / comm_rate : kNever;
    const double dt = std::min({to_compute, to_comm, start_at - t});
    if (dt == kNever) break;  // nothing can happen: no gradient left to wait for
    const bool gap_done = computing && to_compute <= dt, comm_done = running && to_comm <= dt;
    left = gap_done ? 0 : left - dt * compute_rate;
    comm_left = comm_done ? 0 : comm_left - dt * comm_rate;
    t += dt;
    if (gap_done && gap < n) {
      everywhere[gap] = t + std::max(0.0, in.ready[gap].all - in.ready[gap].own);
      left = work_of(++gap);
    } else if (gap_done) {
      computing = false, out.compute_end = t;
    }
    if (comm_done) running = false, free_at = t, out.allreduces.emplace_back(started, t), ++next;
  }
  if (computing) out.compute_end = t;
  return out;
}

}  // namespace

void set_compute_work(IterationInputs& in, const std::vector<std::pair<double, double>>& allreduces, double rate) {
  const auto work = [&](double begin, double end) {
    if (end <= begin) return 0.0;
    const double beside = time_beside(begin, end, allreduces);
    return end - begin - beside + beside * rate;
  };
  double previous = 0;
  for (auto& r : in.ready) {
    r.work = work(previous, r.own);
    previous = std::max(previous, r.own);
  }
  in.tail_work = work(previous, in.compute_end);
}

Simulated simulate(const IterationInputs& in, const AllreduceCost& cost, int64_t first_cap, int64_t cap) {
  std::vector<int64_t> sizes;
  int64_t total_bytes = 0;
  for (const auto& r : in.ready)
    sizes.push_back(r.bytes), total_bytes += r.bytes;
  std::vector<Bucket> buckets;
  size_t first = 0;
  for (size_t last : pack_buckets(sizes, {first_cap, cap})) {
    Bucket b{first, last, 0, 0};
    for (size_t i = first; i <= last; ++i)
      b.bytes += sizes[i];
    b.work = cost.cost_ns(static_cast<double>(b.bytes));
    buckets.push_back(b);
    first = last + 1;
  }
  const Timeline timeline = replay(in, cost, buckets);
  Simulated s;
  s.buckets = static_cast<int>(buckets.size());
  s.compute_end = timeline.compute_end;
  s.allreduces = timeline.allreduces;
  // The fused optimizer steps each bucket on the training thread once its allreduce is
  // done and backward's compute is over, at the run's optimizer rate per byte.
  const double optimizer_ns_per_byte = total_bytes > 0 ? in.optimizer_ns / static_cast<double>(total_bytes) : 0;
  double stepped_at = s.compute_end, free_at = 0;
  for (size_t b = 0; b < timeline.allreduces.size(); ++b) {
    const auto [start, end] = timeline.allreduces[b];
    free_at = end;
    stepped_at = std::max(stepped_at, end) + optimizer_ns_per_byte * static_cast<double>(buckets[b].bytes);
    s.comm += end - start;
    s.exposed += std::max(0.0, end - std::max(start, s.compute_end));
  }
  const double writeback = in.writeback_ns - in.optimizer_in_writeback_ns;
  const double tail = in.tail_ns - in.optimizer_in_tail_ns;
  s.iteration = in.pre_ns + std::max(s.compute_end, free_at) + writeback + in.optimizer_ns + tail;
  s.fused_iteration = in.pre_ns + std::max(s.compute_end, stepped_at) + writeback + tail;
  return s;
}

}  // namespace ddpscope::probes
