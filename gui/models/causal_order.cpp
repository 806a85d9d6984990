#include "causal_order.h"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

namespace ddpscope::gui {

CausalOrder causalOrder(const std::vector<CausalStep>& steps) {
  const size_t n = steps.size();
  std::map<int, size_t> rank_index;
  for (const CausalStep& s : steps)
    rank_index.try_emplace(s.rank, rank_index.size());
  // Each rank's steps in clock order: its previous step is its first cause.
  std::vector<std::vector<size_t>> by_rank(rank_index.size());
  for (size_t i = 0; i < n; ++i)
    by_rank[rank_index[steps[i].rank]].push_back(i);
  std::vector<size_t> previous(n, n);
  for (auto& own : by_rank) {
    std::stable_sort(own.begin(), own.end(), [&](size_t a, size_t b) { return steps[a].t_ns < steps[b].t_ns; });
    for (size_t k = 1; k < own.size(); ++k)
      previous[own[k]] = own[k - 1];
  }
  std::vector<std::vector<size_t>> waits_for(n), followers(n);
  for (size_t i = 0; i < n; ++i) {
    if (previous[i] < n) waits_for[i].push_back(previous[i]);
    for (size_t c : steps[i].causes)
      if (c < n && c != i) waits_for[i].push_back(c);
    std::sort(waits_for[i].begin(), waits_for[i].end());
    waits_for[i].erase(std::unique(waits_for[i].begin(), waits_for[i].end()), waits_for[i].end());
    for (size_t c : waits_for[i])
      followers[c].push_back(i);
  }
  // Among the steps whose causes are all shown, the earliest by its own clock.
  using Ready = std::tuple<int64_t, size_t>;
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  std::vector<size_t> left(n);
  for (size_t i = 0; i < n; ++i) {
    left[i] = waits_for[i].size();
    if (left[i] == 0) ready.push({steps[i].t_ns, i});
  }
  CausalOrder out;
  out.order.reserve(n);
  std::vector<bool> shown(n, false);
  while (!ready.empty()) {
    const size_t i = std::get<1>(ready.top());
    ready.pop();
    out.order.push_back(i);
    shown[i] = true;
    for (size_t f : followers[i])
      if (--left[f] == 0) ready.push({steps[f].t_ns, f});
  }
  if (out.order.size() < n) {
    std::vector<size_t> rest;
    for (size_t i = 0; i < n; ++i)
      if (!shown[i]) rest.push_back(i);
    std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) { return steps[a].t_ns < steps[b].t_ns; });
    out.cyclic = rest.size();
    out.order.insert(out.order.end(), rest.begin(), rest.end());
  }
  // Vector clocks: clock[i][r] counts rank r's steps that happen before or at step i.
  const size_t ranks = rank_index.size();
  std::vector<std::vector<int>> clock(n);
  for (size_t i : out.order) {
    std::vector<int> c(ranks, 0);
    for (size_t w : waits_for[i])
      if (!clock[w].empty())
        for (size_t r = 0; r < ranks; ++r)
          c[r] = std::max(c[r], clock[w][r]);
    ++c[rank_index[steps[i].rank]];
    clock[i] = std::move(c);
  }
  out.concurrent_with_previous.assign(n, false);
  for (size_t k = 1; k < n; ++k) {
    const size_t a = out.order[k - 1], b = out.order[k];
    const size_t ra = rank_index[steps[a].rank];
    out.concurrent_with_previous[k] = clock[a][ra] > clock[b][ra];  // a did not happen before b
  }
  return out;
}

}  // namespace ddpscope::gui
