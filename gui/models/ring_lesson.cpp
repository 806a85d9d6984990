#include "ring_lesson.h"

#include "lesson_kind.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <map>

namespace ddpscope::gui {
namespace {

std::string phaseOf(const Lesson& l, const LessonStep& st) {
  return st.iteration < l.ring_ranks - 1 ? "reduce-scatter" : "all-gather";
}

}  // namespace

Lesson loadRingLesson(probes::RunStoreReader& run, const ClockSkew& skew) {
  Lesson l;
  l.ring = true;
  l.kind = &ringLessonKind();
  const auto spans = run.spans({.kinds = {probes::Kind::RingStep}});
  if (spans.empty()) return l;
  int64_t seq = spans.front().seq;
  for (const auto& s : spans)
    seq = std::min(seq, s.seq);
  int64_t ranks = 0;
  for (const auto& s : spans)
    if (s.seq == seq) ranks = std::max({ranks, int64_t{s.rank} + 1, s.peer + 1});
  // The grid shows every rank's every block: past 16 ranks it is unreadable, and a lesson
  // of 63 took minutes and GBs to replay.
  if (ranks > kMaxRingRanks)
    throw probes::RunStoreError(
        detail::concat("the ring allreduce in '", run.path(), "' has ", ranks,
                       " ranks; the ring lesson shows rings of at most ", kMaxRingRanks,
                       " (record one with `ddpscope-cli example ring --np ", kMaxRingRanks, "` or fewer)"),
        __FILE__, __LINE__);
  // Every field indexes the grid: a damaged run's block 1000000 is refused, not followed.
  const int64_t steps = 2 * (ranks - 1);
  for (const auto& s : spans) {
    if (s.seq != seq) continue;
    const auto outside = [&](int64_t v, int64_t n) { return v < 0 || v >= n; };
    if (outside(s.rank, ranks) || s.peer != (s.rank + 1) % ranks || outside(s.param, ranks) ||
        outside(s.bucket, ranks) || outside(s.msg_id, steps))
      throw probes::RunStoreError(detail::concat("run file '", run.path(), "' is damaged: a ring step of rank ", s.rank,
                                                 " (step ", s.msg_id, ", to rank ", s.peer, ", blocks ", s.param,
                                                 " and ", s.bucket, ") lies outside its ", ranks, "-rank ring"),
                                  __FILE__, __LINE__);
  }
  // Each recorded step in two halves: the send when the step began, the receive when it
  // ended (a ring_step span ends when its block has arrived).
  std::map<std::pair<int, int>, size_t> send_at, receive_at;  // (rank, step) -> index
  for (const auto& s : spans) {
    if (s.seq != seq) continue;
    const int64_t shift = skewOf(skew, s.rank);
    LessonStep send;
    send.kind = StepKind::RingSend;
    send.t_ns = s.t_begin_ns + shift;
    send.rank = s.rank;
    send.peer = static_cast<int>(s.peer);
    send.iteration = static_cast<int>(s.msg_id);
    send.param = static_cast<int>(s.param);  // the block sent
    send.bytes = s.bytes;
    send.name = s.name;
    send.duration_us = static_cast<double>(s.t_end_ns - s.t_begin_ns) / 1e3;
    LessonStep receive = send;
    receive.kind = StepKind::RingReceive;
    receive.t_ns = s.t_end_ns + shift;
    receive.peer = static_cast<int>((s.rank + ranks - 1) % ranks);
    receive.param = -1;
    receive.bucket = static_cast<int>(s.bucket);  // the block received
    send_at[{send.rank, send.iteration}] = l.steps.size();
    l.steps.push_back(send);
    receive_at[{receive.rank, receive.iteration}] = l.steps.size();
    l.steps.push_back(receive);
  }
  // A receive waits for the send of the rank before it; a send, for the receive that
  // brought the block it sends (its rank's step before).
  std::vector<std::vector<size_t>> causes(l.steps.size());
  for (size_t i = 0; i < l.steps.size(); ++i) {
    const LessonStep& st = l.steps[i];
    const auto cause = st.kind == StepKind::RingReceive ? send_at.find({st.peer, st.iteration})
                                                        : receive_at.find({st.rank, st.iteration - 1});
    if (cause != (st.kind == StepKind::RingReceive ? send_at.end() : receive_at.end()))
      causes[i].push_back(cause->second);
  }
  orderByCausality(l.steps, causes);
  l.ring_ranks = static_cast<int>(ranks);
  // Every rank sums the same tensor: a rank's first reduce-scatter steps send each block once.
  int64_t bytes = 0;
  for (const LessonStep& st : l.steps)
    if (st.rank == 0 && st.kind == StepKind::RingSend) bytes += st.bytes;
  // Rank 0 sent 2(n-1) blocks; the tensor is n blocks (their sizes differ by at most one element).
  l.ring_tensor_bytes = l.ring_ranks > 1 ? bytes * l.ring_ranks / (2 * (l.ring_ranks - 1)) : 0;
  l.pass = seq;
  return l;
}

LessonState ringStateAfter(const Lesson& l, size_t applied) {
  LessonState s;
  const int n = l.ring_ranks;
  s.holds.assign(static_cast<size_t>(n), std::vector<uint64_t>(static_cast<size_t>(n), 0));
  for (int r = 0; r < n; ++r)
    for (int b = 0; b < n; ++b)
      s.holds[static_cast<size_t>(r)][static_cast<size_t>(b)] = uint64_t{1} << r;
  s.ring_steps_done.assign(static_cast<size_t>(n), 0);
  s.ring_steps_received.assign(static_cast<size_t>(n), 0);
  s.ring_bytes_sent.assign(static_cast<size_t>(n), 0);
  // What each rank held after each of its steps: step k of rank r receives from its left
  // neighbour the block that neighbour held after its step k-1 (what it sent at step k).
  std::vector<std::vector<std::vector<uint64_t>>> after(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r)
    after[static_cast<size_t>(r)].push_back(s.holds[static_cast<size_t>(r)]);
  const int steps = 2 * (n - 1);
  std::vector<const LessonStep*> received(static_cast<size_t>(n * steps), nullptr);  // [rank * steps + k]
  for (const LessonStep& st : l.steps)
    if (st.kind == StepKind::RingReceive && st.rank >= 0 && st.rank < n && st.iteration >= 0 && st.iteration < steps)
      received[static_cast<size_t>(st.rank * steps + st.iteration)] = &st;
  for (int k = 0; k < steps; ++k) {
    for (int r = 0; r < n; ++r) {
      auto next = after[static_cast<size_t>(r)].back();
      if (const LessonStep* step = received[static_cast<size_t>(r * steps + k)]) {
        const int left = (r + n - 1) % n;
        const auto block = static_cast<size_t>(step->bucket);
        const uint64_t incoming = after[static_cast<size_t>(left)][static_cast<size_t>(k)][block];
        next[block] = k < n - 1 ? (next[block] | incoming) : incoming;
      }
      after[static_cast<size_t>(r)].push_back(next);
    }
  }
  for (size_t i = 0; i < applied && i < l.steps.size(); ++i) {
    const LessonStep& st = l.steps[i];
    if (st.rank < 0 || st.rank >= n) continue;
    const auto r = static_cast<size_t>(st.rank);
    if (st.kind == StepKind::RingSend) {
      s.ring_steps_done[r] = std::max(s.ring_steps_done[r], st.iteration + 1);
      s.ring_bytes_sent[r] += st.bytes;
    } else if (st.kind == StepKind::RingReceive) {
      s.ring_steps_received[r] = std::max(s.ring_steps_received[r], st.iteration + 1);
    }
  }
  for (int r = 0; r < n; ++r)
    s.holds[static_cast<size_t>(r)] =
        after[static_cast<size_t>(r)][static_cast<size_t>(s.ring_steps_received[static_cast<size_t>(r)])];
  return s;
}

std::string ringHoldsText(uint64_t holds, int ranks) {
  if (ranks > 0 && std::popcount(holds) == ranks) return "all " + std::to_string(ranks);
  std::string s;
  for (int r = 0; r < 64; ++r) {
    if (!(holds >> r & 1)) continue;
    s += (s.empty() ? "" : "+") + std::to_string(r);
  }
  return s;
}

std::string explainRingStep(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const int n = l.ring_ranks;
  const LessonState before = ringStateAfter(l, i), after = ringStateAfter(l, i + 1);
  const auto r = static_cast<size_t>(st.rank);
  const bool scatter = st.iteration < n - 1;
  const int k = scatter ? st.iteration : st.iteration - (n - 1);
  char buf[640];
  if (st.kind == StepKind::RingSend) {
    const uint64_t sent = before.holds[r][static_cast<size_t>(st.param)];
    if (scatter)
      std::snprintf(buf, sizeof buf,
                    "Reduce-scatter, step %d of %d on rank %d: it sends block %d (the sum of ranks %s) to rank %d.",
                    k + 1, n - 1, st.rank, st.param, ringHoldsText(sent, n).c_str(), st.peer);
    else
      std::snprintf(buf, sizeof buf,
                    "All-gather, step %d of %d on rank %d: it passes the full sum of block %d to rank %d.", k + 1,
                    n - 1, st.rank, st.param, st.peer);
  } else {
    const uint64_t got = after.holds[r][static_cast<size_t>(st.bucket)];
    if (scatter)
      std::snprintf(buf, sizeof buf,
                    "Reduce-scatter, step %d of %d on rank %d: block %d arrives from rank %d and is added to its own: "
                    "its block %d now sums ranks %s.%s",
                    k + 1, n - 1, st.rank, st.bucket, st.peer, st.bucket, ringHoldsText(got, n).c_str(),
                    k == n - 2 ? " Its reduce-scatter is done: one block holds every rank's sum." : "");
    else
      std::snprintf(buf, sizeof buf,
                    "All-gather, step %d of %d on rank %d: block %d's full sum arrives from rank %d, in place of its "
                    "own.%s",
                    k + 1, n - 1, st.rank, st.bucket, st.peer,
                    k == n - 2 ? " This rank is done: every block holds the sum of all ranks." : "");
  }
  std::string text = buf;
  if (st.concurrent) text += " " + concurrentText();
  const bool all_done = std::all_of(after.ring_steps_received.begin(), after.ring_steps_received.end(),
                                    [n](int done) { return done == 2 * (n - 1); });
  if (all_done && st.kind == StepKind::RingReceive) {
    const double share = 2.0 * (n - 1) / n;
    std::snprintf(buf, sizeof buf,
                  " The allreduce is done. Each rank sent %d blocks of 1/%d of the tensor: 2(n-1)/n = %.2f times its "
                  "%lld bytes, whatever n: the bytes a rank sends hardly grow with the ranks (its steps do).",
                  2 * (n - 1), n, share, static_cast<long long>(l.ring_tensor_bytes));
    text += buf;
  }
  return text;
}

namespace {

// The ranks whose values a block sums, in order.
nlohmann::json summed(uint64_t holds) {
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < 64; ++r)
    if (holds >> r & 1) ranks.push_back(r);
  return ranks;
}

// A ring allreduce's steps: blocks going round, each rank's sums growing.
class RingLessonKind final : public LessonKind {
 public:
  const char* name() const override { return "ring"; }
  const char* view() const override { return "ring"; }
  // Ring steps and nothing else to replay (a DDP job over the ring has its own lessons).
  bool foundIn(probes::RunStoreReader& run) const override {
    return !run.spans({.kinds = {probes::Kind::RingStep}, .limit = 1}).empty() && listDistGraphs(run).empty() &&
           run.spans({.kinds = {probes::Kind::GradReady}, .limit = 1}).empty();
  }
  Lesson load(probes::RunStoreReader& run, int) const override { return loadRingLesson(run); }
  LessonState stateAfter(const Lesson& l, size_t applied) const override { return ringStateAfter(l, applied); }
  std::string explain(const Lesson& l, size_t i) const override { return explainRingStep(l, i); }
  // Which block does this rank send next?
  bool asksBefore(const LessonStep& next) const override { return next.kind == StepKind::RingSend; }
  void describe(const Lesson& l, const LessonState& s, nlohmann::json& j) const override {
    j["ranks"] = l.ring_ranks;
    j["tensor_bytes"] = l.ring_tensor_bytes;
    nlohmann::json blocks = nlohmann::json::array();
    for (const auto& row : s.holds) {
      nlohmann::json rank = nlohmann::json::array();
      for (uint64_t h : row)
        rank.push_back(summed(h));
      blocks.push_back(rank);
    }
    j["blocks"] = blocks;
    j["sent_steps"] = s.ring_steps_done;
    j["received_steps"] = s.ring_steps_received;
    j["bytes_sent"] = s.ring_bytes_sent;
  }
};

}  // namespace

const LessonKind& ringLessonKind() {
  static const RingLessonKind kind;
  return kind;
}

}  // namespace ddpscope::gui
