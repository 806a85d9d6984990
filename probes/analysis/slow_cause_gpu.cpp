#include "slow_cause_gpu.h"

#include <algorithm>
#include <limits>
#include <tuple>

#include "slow_cause_timeline.h"

namespace ddpscope::probes {
namespace {

// The CPU phase whose span holds `t` (1 forward, 2 backward, 3 optimizer), else 0: outside the step.
int phase_at(const RankTimeline& r, int64_t t) {
  for (int p = 1; p <= 3; ++p) {
    const auto& spans = r.phases[static_cast<size_t>(p)];
    const auto it =
        std::upper_bound(spans.begin(), spans.end(), t, [](int64_t x, const Interval& i) { return x < i.end; });
    if (it != spans.end() && it->begin <= t) return p;
  }
  return 0;
}

}  // namespace

void add_gpu_span(GpuSpans& gpu, const CompactSpan& s) {
  switch (s.kind) {
    case Kind::CudaRuntime:
      if (s.msg_id >= 0) gpu.launches.push_back({s.t_begin_ns, s.thread, s.msg_id});
      break;
    case Kind::GpuComm:
      if (s.msg_id >= 0) gpu.nccl[s.msg_id] = {s.t_begin_ns, s.t_end_ns};
      gpu.other.emplace_back(s.t_begin_ns, s.t_end_ns);  // busy either way
      break;
    case Kind::GpuKernel: gpu.compute.push_back({s.msg_id, {s.t_begin_ns, s.t_end_ns}}); break;
    case Kind::GpuMemcpy:
    case Kind::GpuMemset: gpu.other.emplace_back(s.t_begin_ns, s.t_end_ns); break;
    default: break;
  }
}

void apply_gpu_truth(RankTimeline& r, GpuSpans&& gpu) {
  if (!gpu.any()) return;
  r.gpu = true;
  std::sort(gpu.launches.begin(), gpu.launches.end(),
            [](const GpuLaunch& a, const GpuLaunch& b) { return std::tie(a.thread, a.t) < std::tie(b.thread, b.t); });
  // Each collective on its NCCL kernel: the first launch of one inside its CPU span.
  for (TimelineCollective& c : r.collectives) {
    auto it = std::lower_bound(
        gpu.launches.begin(), gpu.launches.end(), GpuLaunch{c.begin, c.thread, 0},
        [](const GpuLaunch& a, const GpuLaunch& b) { return std::tie(a.thread, a.t) < std::tie(b.thread, b.t); });
    for (; it != gpu.launches.end() && it->thread == c.thread && it->t <= c.end; ++it) {
      const auto kernel = gpu.nccl.find(it->correlation);
      if (kernel == gpu.nccl.end()) continue;
      c.begin = kernel->second.first;
      c.end = kernel->second.second;
      break;
    }
  }
  std::sort(r.collectives.begin(), r.collectives.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  // Computation kernels by the phase their launch ran in.
  std::map<int64_t, int64_t> launched_at;
  for (const GpuLaunch& l : gpu.launches)
    launched_at.emplace(l.correlation, l.t);
  std::vector<Interval> busy;
  for (const auto& [correlation, span] : gpu.compute) {
    const auto at = launched_at.find(correlation);
    const int phase = at == launched_at.end() ? 0 : phase_at(r, at->second);
    r.gpu_phases[static_cast<size_t>(phase)].push_back({span.first, span.second});
    busy.push_back({span.first, span.second});
  }
  for (auto& phase : r.gpu_phases)
    phase = merge_intervals(std::move(phase));
  for (const auto& [b, e] : gpu.other)
    busy.push_back({b, e});
  r.gpu_busy = merge_intervals(std::move(busy));
}

}  // namespace ddpscope::probes
