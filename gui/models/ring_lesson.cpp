#include "ring_lesson.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>

namespace ddpscope::gui {
namespace {

std::string phase_of(const Lesson& l, const LessonStep& st) {
  return st.iteration < l.ring_ranks - 1 ? "reduce-scatter" : "all-gather";
}

}  // namespace

Lesson load_ring_lesson(probes::RunStoreReader& run) {
  Lesson l;
  l.ring = true;
  const auto spans = run.spans({.kinds = {probes::Kind::RingStep}});
  if (spans.empty()) return l;
  int64_t seq = spans.front().seq;
  for (const auto& s : spans)
    seq = std::min(seq, s.seq);
  int ranks = 0;
  for (const auto& s : spans) {
    if (s.seq != seq) continue;
    ranks = std::max({ranks, static_cast<int>(s.rank) + 1, static_cast<int>(s.peer) + 1});
    LessonStep st;
    st.kind = StepKind::RingStep;
    st.t_ns = s.t_end_ns;
    st.duration_us = static_cast<double>(s.t_end_ns - s.t_begin_ns) / 1e3;
    st.rank = s.rank;
    st.peer = static_cast<int>(s.peer);
    st.iteration = static_cast<int>(s.msg_id);
    st.param = static_cast<int>(s.param);    // the block sent
    st.bucket = static_cast<int>(s.bucket);  // the block received
    st.bytes = s.bytes;
    st.name = s.name;
    l.steps.push_back(st);
  }
  // In the order they completed, a tie by rank. A rank's own steps stay in step order
  // (ranks on several hosts have clocks apart): in the places that rank's steps take,
  // its steps by number.
  std::stable_sort(l.steps.begin(), l.steps.end(), [](const LessonStep& a, const LessonStep& b) {
    return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.rank < b.rank;
  });
  std::map<int, std::vector<size_t>> places;
  for (size_t i = 0; i < l.steps.size(); ++i)
    places[l.steps[i].rank].push_back(i);
  for (const auto& [rank, at] : places) {
    std::vector<LessonStep> own;
    for (size_t i : at)
      own.push_back(l.steps[i]);
    std::sort(own.begin(), own.end(),
              [](const LessonStep& a, const LessonStep& b) { return a.iteration < b.iteration; });
    for (size_t k = 0; k < at.size(); ++k) {
      const int64_t t = l.steps[at[k]].t_ns;  // the place's time: times stay in order
      l.steps[at[k]] = own[k];
      l.steps[at[k]].t_ns = t;
    }
  }
  l.ring_ranks = std::min(ranks, 63);
  // Every rank sums the same tensor: a rank's first reduce-scatter steps send each block once.
  int64_t bytes = 0;
  for (const LessonStep& st : l.steps)
    if (st.rank == 0) bytes += st.bytes;
  // Rank 0 sent 2(n-1) blocks; the tensor is n blocks (their sizes differ by at most one element).
  l.ring_tensor_bytes = l.ring_ranks > 1 ? bytes * l.ring_ranks / (2 * (l.ring_ranks - 1)) : 0;
  l.pass = seq;
  return l;
}

LessonState ring_state_after(const Lesson& l, size_t applied) {
  LessonState s;
  const int n = l.ring_ranks;
  s.holds.assign(static_cast<size_t>(n), std::vector<uint64_t>(static_cast<size_t>(n), 0));
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < n; ++b)
      s.holds[static_cast<size_t>(r)][static_cast<size_t>(b)] = uint64_t{1} << r;
  s.ring_steps_done.assign(static_cast<size_t>(n), 0);
  s.ring_bytes_sent.assign(static_cast<size_t>(n), 0);
  // What each rank held after each of its steps (the block it sends at step k is its copy
  // after step k-1, whenever the receiver's step shows up in time order).
  std::vector<std::vector<std::vector<uint64_t>>> after(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    after[static_cast<size_t>(r)].push_back(s.holds[static_cast<size_t>(r)]);
  // Lockstep over the recorded blocks: step k of rank r receives from its left neighbour
  // the block that neighbour held after its step k-1 (its copy at step k).
  const int steps = 2 * (n - 1);
  std::vector<const LessonStep*> recorded(static_cast<size_t>(n * steps), nullptr);  // [rank * steps + k]
  for (const LessonStep& st : l.steps)
    if (st.rank >= 0 && st.rank < n && st.iteration >= 0 && st.iteration < steps)
      recorded[static_cast<size_t>(st.rank * steps + st.iteration)] = &st;
  for (int k = 0; k < steps; ++k) {
    for (int r = 0; r < n; ++r) {
      auto next = after[static_cast<size_t>(r)].back();
      if (const LessonStep* step = recorded[static_cast<size_t>(r * steps + k)]) {
        const LessonStep& st = *step;
        const int left = (r + n - 1) % n;
        const size_t block = static_cast<size_t>(st.bucket);
        const uint64_t incoming = after[static_cast<size_t>(left)][static_cast<size_t>(k)][block];
        next[block] = k < n - 1 ? (next[block] | incoming) : incoming;
      }
      after[static_cast<size_t>(r)].push_back(next);
    }
  }
  for (size_t i = 0; i < applied && i < l.steps.size(); ++i) {
    const LessonStep& st = l.steps[i];
    const auto r = static_cast<size_t>(st.rank);
    s.ring_steps_done[r] = std::max(s.ring_steps_done[r], st.iteration + 1);
    s.ring_bytes_sent[r] += st.bytes;
  }
  for (int r = 0; r < n; ++r)
    s.holds[static_cast<size_t>(r)] =
        after[static_cast<size_t>(r)][static_cast<size_t>(s.ring_steps_done[static_cast<size_t>(r)])];
  return s;
}

std::string ring_holds_text(uint64_t holds, int ranks) {
  if (ranks > 0 && std::popcount(holds) == ranks) return "all " + std::to_string(ranks);
  std::string s;
  for (int r = 0; r < 64; ++r) {
    if (!(holds >> r & 1)) continue;
    s += (s.empty() ? "" : "+") + std::to_string(r);
  }
  return s;
}

std::string explain_ring_step(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const int n = l.ring_ranks;
  const LessonState before = ring_state_after(l, i), after = ring_state_after(l, i + 1);
  const auto r = static_cast<size_t>(st.rank);
  const uint64_t sent = before.holds[r][static_cast<size_t>(st.param)];
  const uint64_t got = after.holds[r][static_cast<size_t>(st.bucket)];
  const int left = (st.rank + n - 1) % n;
  char buf[640];
  if (st.iteration < n - 1) {
    std::snprintf(buf, sizeof buf,
                  "Reduce-scatter, step %d of %d on rank %d: it sends block %d (the sum of ranks %s) to rank %d, "
                  "receives block %d from rank %d and adds it to its own: its block %d now sums ranks %s.%s",
                  st.iteration + 1, n - 1, st.rank, st.param, ring_holds_text(sent, n).c_str(), st.peer, st.bucket,
                  left, st.bucket, ring_holds_text(got, n).c_str(),
                  st.iteration == n - 2 ? " Its reduce-scatter is done: one block holds every rank's sum." : "");
  } else {
    const int k = st.iteration - (n - 1);
    std::snprintf(buf, sizeof buf,
                  "All-gather, step %d of %d on rank %d: it passes the full sum of block %d to rank %d and receives "
                  "block %d's full sum from rank %d, in place of its own.%s",
                  k + 1, n - 1, st.rank, st.param, st.peer, st.bucket, left,
                  k == n - 2 ? " This rank is done: every block holds the sum of all ranks." : "");
  }
  std::string text = buf;
  const bool all_done = std::all_of(after.ring_steps_done.begin(), after.ring_steps_done.end(),
                                    [n](int done) { return done == 2 * (n - 1); });
  if (all_done) {
    const double share = 2.0 * (n - 1) / n;
    std::snprintf(buf, sizeof buf,
                  " The allreduce is done. Each rank sent %d blocks of 1/%d of the tensor: 2(n-1)/n = %.2f times its "
                  "%lld bytes, whatever n: the bytes a rank sends hardly grow with the ranks (its steps do).",
                  2 * (n - 1), n, share, static_cast<long long>(l.ring_tensor_bytes));
    text += buf;
  }
  return text;
}

}  // namespace ddpscope::gui
