#include "time_breakdown.h"

#include <algorithm>
#include <map>
#include <set>

namespace ddpscope::probes {

std::vector<TimeBreakdown> breakdown_by_iteration(const RunAnalysis& analysis) {
  std::set<std::pair<int, int64_t>> straggling;
  for (const auto& s : find_stragglers(analysis))
    straggling.insert({s.rank, s.iteration});
  std::vector<TimeBreakdown> rows;
  rows.reserve(analysis.iterations.size());
  for (const auto& it : analysis.iterations) {
    TimeBreakdown b;
    b.rank = it.rank;
    b.iteration = it.iteration;
    b.iteration_ms = it.iteration_ms;
    b.gpu = it.from_gpu;
    if (b.gpu) {
      b.computation_ms = it.compute_ms;
    } else {
      b.forward_ms = it.forward_ms;
      b.backward_ms = std::max(0.0, it.compute_ms - it.forward_ms);
      b.optimizer_ms = it.optimizer_ms;
    }
    b.exposed_comm_ms = it.exposed_comm_ms;
    b.hidden_comm_ms = std::max(0.0, it.comm_ms - it.exposed_comm_ms);
    b.exposed_wait_ms = it.wait_known ? it.exposed_wait_ms : 0;
    b.wait_iterations = it.wait_known ? 1 : 0;
    b.idle_ms = std::max(
        0.0, it.iteration_ms - b.forward_ms - b.backward_ms - b.computation_ms - b.exposed_comm_ms - b.optimizer_ms);
    b.straggler = straggling.count({it.rank, it.iteration}) > 0;
    rows.push_back(b);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TimeBreakdown& a, const TimeBreakdown& b) {
    return std::pair(a.rank, a.iteration) < std::pair(b.rank, b.iteration);
  });
  return rows;
}

std::vector<TimeBreakdown> breakdown_by_rank(const std::vector<TimeBreakdown>& rows) {
  std::map<int, std::vector<const TimeBreakdown*>> per_rank;
  for (const auto& r : rows)
    per_rank[r.rank].push_back(&r);
  std::vector<TimeBreakdown> out;
  for (auto& [rank, its] : per_rank) {
    TimeBreakdown m;
    m.rank = rank;
    m.iteration = -1;
    for (const TimeBreakdown* r : its)
      m.straggled += r->straggler ? 1 : 0;
    // The first iteration builds buckets and warms caches: not what a user tunes.
    const size_t skip = its.size() > 2 ? 1 : 0;
    m.iterations = static_cast<int64_t>(its.size() - skip);
    for (size_t i = skip; i < its.size(); ++i) {
      const TimeBreakdown& r = *its[i];
      m.gpu = m.gpu || r.gpu;
      m.computation_ms += r.computation_ms;
      m.iteration_ms += r.iteration_ms;
      m.forward_ms += r.forward_ms;
      m.backward_ms += r.backward_ms;
      m.exposed_comm_ms += r.exposed_comm_ms;
      m.hidden_comm_ms += r.hidden_comm_ms;
      m.exposed_wait_ms += r.exposed_wait_ms;
      m.wait_iterations += r.wait_iterations;
      m.optimizer_ms += r.optimizer_ms;
      m.idle_ms += r.idle_ms;
    }
    const double n = std::max<double>(1, static_cast<double>(m.iterations));
    for (double* v : {&m.iteration_ms, &m.forward_ms, &m.backward_ms, &m.computation_ms, &m.exposed_comm_ms,
                      &m.hidden_comm_ms, &m.optimizer_ms, &m.idle_ms})
      *v /= n;
    m.exposed_wait_ms /= std::max<double>(1, static_cast<double>(m.wait_iterations));
    out.push_back(m);
  }
  return out;
}

int main_straggler(const std::vector<TimeBreakdown>& by_rank) {
  int rank = -1;
  int64_t most = 0;
  for (const auto& r : by_rank) {
    if (r.straggled > most) most = r.straggled, rank = r.rank;
  }
  return rank;
}

}  // namespace ddpscope::probes
