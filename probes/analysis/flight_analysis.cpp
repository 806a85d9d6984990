#include "flight_analysis.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "ddpscope/error.h"
#include "flight_p2p.h"
#include "flight_words.h"

namespace ddpscope::probes {
namespace {

using namespace flight_words;

using Signature = std::tuple<std::string, std::vector<std::vector<int64_t>>, std::vector<std::vector<int64_t>>,
                             std::vector<std::string>, std::vector<std::string>>;
Signature signature(const CollectiveRow& r) {
  return {r.op, r.input_sizes, r.output_sizes, r.input_dtypes, r.output_dtypes};
}

// Step order of the trainer's phases (flight_recorder.h set_phase); "" is outside a step.
int phase_rank(const std::string& phase) {
  static const char* const order[] = {"forward", "backward", "gradient sync", "optimizer", "loss allreduce"};
  for (int i = 0; i < 5; ++i)
    if (phase == order[i]) return i;
  return -1;
}

// A call made from a later point of training than another's (iteration, then phase).
bool later_step(const CollectiveRow& a, const CollectiveRow& b) {
  if (a.iteration < 0 || b.iteration < 0) return false;
  if (a.iteration != b.iteration) return a.iteration > b.iteration;
  const int pa = phase_rank(a.phase), pb = phase_rank(b.phase);
  return pa >= 0 && pb >= 0 && pa > pb;
}

struct RankCalls {
  std::map<int64_t, const CollectiveRow*> by_seq;
  int64_t min_seq = -1, max_seq = -1;
};

class GroupMatcher {
 public:
  GroupMatcher(std::string name, const FlightData& data, const std::set<int>& timed_out,
               const std::map<int, int64_t>& late, int dead_rank, std::string dead_signal)
      : timed_out_(timed_out), late_(late), dead_rank_(dead_rank), dead_signal_(std::move(dead_signal)) {
    f_.group = std::move(name);
    for (const GroupRow& g : data.groups) {
      if (g.name != f_.group) continue;
      if (f_.members.empty()) f_.members = g.ranks;
      if (f_.desc.empty()) f_.desc = g.desc;
    }
    std::set<int> recorded;
    for (const auto& [rank, rows] : data.by_rank) {
      for (const CollectiveRow& r : rows) {
        if (r.pg_name != f_.group || r.is_p2p()) continue;
        RankCalls& c = calls_[rank];
        c.by_seq[r.collective_seq] = &r;
        recorded.insert(rank);
        if (f_.desc.empty()) f_.desc = r.pg_desc;
      }
    }
    if (f_.members.empty()) f_.members.assign(recorded.begin(), recorded.end());
    for (auto& [rank, c] : calls_) {
      c.min_seq = c.by_seq.begin()->first;
      c.max_seq = c.by_seq.rbegin()->first;
    }
    for (int m : f_.members)
      if (!calls_.count(m)) f_.no_records.push_back(m);
    for (const FlightDumpRow& d : data.dumps)
      if (d.trigger == "timeout") (d.source == "stream" ? timeout_streamed_ : timeout_dumped_).insert(d.rank);
  }

  GroupFinding run() {
    if (calls_.empty()) return f_;
    // Older records may have left some rank's ring: compare from where every rank has them.
    int64_t lo = 0, hi = -1;
    for (const auto& [rank, c] : calls_) {
      lo = std::max(lo, c.min_seq);
      hi = std::max(hi, c.max_seq);
    }
    // Every number some rank holds in [lo, hi] (not every integer between: a damaged or
    // foreign dump may number far apart).
    std::set<int64_t> seqs;
    for (const auto& [rank, c] : calls_)
      for (auto it = c.by_seq.lower_bound(lo); it != c.by_seq.end() && it->first <= hi; ++it)
        seqs.insert(it->first);
    if (!seqs.empty()) f_.first_seq = *seqs.begin();
    for (int64_t s : seqs) {
      if (classify(s)) {
        const bool disagree = f_.cls == MatchClass::TypeMismatch || f_.cls == MatchClass::SizeMismatch ||
                              f_.cls == MatchClass::DtypeMismatch;
        // A rank that died is the likeliest cause of a collective some rank never
        // reached or never finished (the others were waiting on it, in a collective or
        // elsewhere); ranks that called different collectives explain themselves.
        dead_first_ = !disagree && dead_rank_ >= 0 && calls_.count(dead_rank_);
        f_.verdict = describe();
        if (dead_first_) put_dead_first();
        return f_;
      }
    }
    // The first collective some rank had not completed (the one the job stopped in), else
    // the last.
    f_.seq = hi;
    for (auto s = seqs.begin(); s != seqs.end() && f_.seq == hi; ++s)
      for (const auto& [rank, c] : calls_)
        if (const auto it = c.by_seq.find(*s); it != c.by_seq.end() && it->second->state_order() < 2) f_.seq = *s;
    f_.calls.clear();
    for (const auto& [rank, c] : calls_)
      if (const auto it = c.by_seq.find(f_.seq); it != c.by_seq.end()) f_.calls[rank] = *it->second;
    // Every rank called every collective alike. Still pending everywhere: the job stopped
    // inside the last one.
    if (std::any_of(f_.calls.begin(), f_.calls.end(), [](const auto& kv) { return kv.second.state_order() < 2; })) {
      f_.pending = true;
      dead_first_ = dead_rank_ >= 0 && calls_.count(dead_rank_);
      f_.verdict = describe_all_waiting();
      if (dead_first_) put_dead_first();
    }
    return f_;
  }

 private:
  // Fills the finding when collective s does not match; false when it does.
  bool classify(int64_t s) {
    // The usual case first, without copying records.
    if (all_alike(s)) return false;
    std::vector<int> present, absent;
    f_.calls.clear();
    for (const auto& [rank, c] : calls_) {
      const auto it = c.by_seq.find(s);
      if (it != c.by_seq.end()) {
        present.push_back(rank);
        f_.calls[rank] = *it->second;
      } else if (c.max_seq < s) {
        absent.push_back(rank);
      }
      // else: a hole (a record that never reached the file): nothing known
    }
    f_.seq = s;
    for (int r : present) {
      if (const std::string unknown = unknown_text(f_.calls.at(r)); !unknown.empty()) {
        f_.cls = MatchClass::UnknownValues;
        f_.culprits.clear();
        f_.others = present;
        unknown_rank_ = r;
        unknown_ = unknown;
        return true;
      }
    }
    if (!absent.empty() && !present.empty()) {
      f_.cls = MatchClass::MissingRanks;
      f_.culprits = absent, f_.others = present;
      f_.pending = true;
      reorder_by_liveness();
      return true;
    }
    return classify_disagreement(present) || classify_states(present);
  }

  // Whether every rank holds collective s, alike, in one state (and at least one holds
  // it): no rank that never called it, no unknown value.
  bool all_alike(int64_t s) const {
    const CollectiveRow* first = nullptr;
    bool alike = true;
    for (const auto& [rank, c] : calls_) {
      const auto it = c.by_seq.find(s);
      if (it == c.by_seq.end()) {
        if (c.max_seq < s) alike = false;  // a rank that never called it
        continue;
      }
      const CollectiveRow& r = *it->second;
      if (!first) {
        first = &r;
        alike = unknown_text(r).empty();
      } else {
        alike = alike && r.op == first->op && r.state_order() == first->state_order() &&
                r.input_sizes == first->input_sizes && r.output_sizes == first->output_sizes &&
                r.input_dtypes == first->input_dtypes && r.output_dtypes == first->output_dtypes;
      }
      if (!alike) break;
    }
    return alike && first;
  }

  // A type, size or dtype mismatch among the ranks that called it (f_.calls).
  bool classify_disagreement(const std::vector<int>& present) {
    std::map<Signature, std::vector<int>> sides;
    for (int r : present)
      sides[signature(f_.calls.at(r))].push_back(r);
    if (sides.size() <= 1) return false;
    const CollectiveRow& a = f_.calls.at(sides.begin()->second.front());
    bool same_op = true, same_sizes = true;
    for (const auto& [sig, ranks] : sides) {
      const CollectiveRow& b = f_.calls.at(ranks.front());
      same_op = same_op && a.op == b.op;
      same_sizes = same_sizes && a.input_sizes == b.input_sizes && a.output_sizes == b.output_sizes;
    }
    f_.cls = !same_op ? MatchClass::TypeMismatch : !same_sizes ? MatchClass::SizeMismatch : MatchClass::DtypeMismatch;
    f_.pending = std::any_of(present.begin(), present.end(), [&](int r) { return f_.calls.at(r).state_order() < 2; });
    blame_disagreement(sides);
    return true;
  }

  // A state mismatch among ranks that called it alike.
  bool classify_states(const std::vector<int>& present) {
    std::vector<int> done, not_done;
    for (int r : present)
      (f_.calls.at(r).state_order() == 2 ? done : not_done).push_back(r);
    if (!done.empty() && !not_done.empty()) {
      f_.cls = MatchClass::StateMismatch;
      f_.pending = true;
      // The ranks that went on are waiting for those still in it, unless those timed out
      // waiting and the ones that went on never did (stopped after their part was sent).
      f_.culprits = not_done, f_.others = done;
      const bool stuck_reported =
          std::all_of(not_done.begin(), not_done.end(), [&](int r) { return timed_out_.count(r); });
      const bool went_on_silent = std::none_of(done.begin(), done.end(), [&](int r) { return timed_out_.count(r); });
      if (stuck_reported && went_on_silent) std::swap(f_.culprits, f_.others), silent_went_on_ = true;
      return true;
    }
    // None completed it; some started it and some have it only scheduled: on a GPU a
    // collective starts when its stream reaches it, so a rank still "scheduled" is held
    // up before it (as PyTorch's analyzer says, a state mismatch naming that rank).
    std::vector<int> started, scheduled;
    for (int r : not_done)
      (f_.calls.at(r).state_order() == 1 ? started : scheduled).push_back(r);
    if (done.empty() && !started.empty() && !scheduled.empty()) {
      f_.cls = MatchClass::StateMismatch;
      f_.pending = true;
      f_.culprits = scheduled, f_.others = started;
      never_started_ = true;
      return true;
    }
    return false;
  }

  // Ranks that timed out themselves were alive and waiting: the culprits are those that
  // did not, when the data says which did.
  void reorder_by_liveness() {
    if (timed_out_.empty()) return;
    std::vector<int> first, later;
    for (int r : f_.culprits)
      (timed_out_.count(r) ? later : first).push_back(r);
    if (first.empty()) {
      // Every absent rank timed out in an earlier collective: each waits there for a rank
      // that went on. Those that went on and never timed out are the likely culprits.
      std::vector<int> silent;
      for (int r : f_.others)
        if (!timed_out_.count(r)) silent.push_back(r);
      if (!silent.empty()) {
        stuck_earlier_ = true;
        f_.others = f_.culprits;
        f_.culprits = silent;
      }
      return;
    }
    first.insert(first.end(), later.begin(), later.end());
    f_.culprits = first;
  }

  void blame_disagreement(const std::map<Signature, std::vector<int>>& sides) {
    // The largest side is the reference; ties keep the side of the lowest rank.
    const std::vector<int>* reference = nullptr;
    for (const auto& [sig, ranks] : sides)
      if (!reference || ranks.size() > reference->size() ||
          (ranks.size() == reference->size() && ranks.front() < reference->front()))
        reference = &ranks;
    const bool tie = std::count_if(sides.begin(), sides.end(),
                                   [&](const auto& kv) { return kv.second.size() == reference->size(); }) > 1;
    const CollectiveRow& ref = f_.calls.at(reference->front());
    std::vector<int> ahead, behind_outside, deviated, minority;
    for (const auto& [sig, ranks] : sides) {
      if (&ranks == reference) continue;
      for (int r : ranks) {
        const CollectiveRow& mine = f_.calls.at(r);
        minority.push_back(r);
        if (later_step(mine, ref) && phase_rank(ref.phase) >= 0) ahead.push_back(r);
        if (later_step(ref, mine) && phase_rank(mine.phase) < 0) behind_outside.push_back(r);
        if (deviates(r, mine, ref)) deviated.push_back(r);
      }
    }
    // The reference side may be the one that deviated (a tie of two ranks).
    std::vector<int> ref_deviated, ref_ahead, ref_outside;
    for (int r : *reference) {
      for (const auto& [sig, ranks] : sides) {
        if (&ranks == reference) continue;
        const CollectiveRow& other = f_.calls.at(ranks.front());
        const CollectiveRow& mine = f_.calls.at(r);
        if (deviates(r, mine, other)) ref_deviated.push_back(r);
        if (later_step(mine, other) && phase_rank(other.phase) >= 0) ref_ahead.push_back(r);
        if (later_step(other, mine) && phase_rank(mine.phase) < 0) ref_outside.push_back(r);
      }
    }
    const auto others_of = [&](const std::vector<int>& culprits) {
      std::vector<int> rest;
      for (const auto& [rank, row] : f_.calls)
        if (std::find(culprits.begin(), culprits.end(), rank) == culprits.end()) rest.push_back(rank);
      return rest;
    };
    const auto blame = [&](std::vector<int> culprits) {
      std::sort(culprits.begin(), culprits.end());
      culprits.erase(std::unique(culprits.begin(), culprits.end()), culprits.end());
      f_.others = others_of(culprits);
      f_.culprits = std::move(culprits);
    };
    if (!ahead.empty() && ref_ahead.empty()) {
      f_.skipped = true;
      blame(ahead);
    } else if (!ref_ahead.empty() && ahead.empty()) {
      f_.skipped = true;
      blame(ref_ahead);
    } else if (!behind_outside.empty()) {
      left_loop_ = true;
      blame(behind_outside);
    } else if (!ref_outside.empty()) {
      left_loop_ = true;
      blame(ref_outside);
    } else if (!deviated.empty() && ref_deviated.empty()) {
      deviated_ = true;
      blame(deviated);
    } else if (!ref_deviated.empty() && deviated.empty()) {
      deviated_ = true;
      blame(ref_deviated);
    } else if (!tie) {
      blame(minority);
    } else {
      undecided_ = true;
      blame(minority);
    }
  }

  // Whether rank r, at the same point (phase) of its previous iteration, called what the
  // other side calls now: then it changed, not them.
  bool deviates(int r, const CollectiveRow& mine, const CollectiveRow& other) const {
    if (mine.phase.empty() || mine.iteration < 0) return false;
    const RankCalls& c = calls_.at(r);
    // Its calls of that phase in the previous iteration, in order; and this call's place
    // among this iteration's calls of the phase.
    std::vector<const CollectiveRow*> before, now;
    for (const auto& [seq, row] : c.by_seq) {
      if (row->phase != mine.phase) continue;
      if (row->iteration == mine.iteration - 1) before.push_back(row);
      if (row->iteration == mine.iteration && seq <= mine.collective_seq) now.push_back(row);
    }
    const size_t place = now.empty() ? 0 : now.size() - 1;
    if (place >= before.size()) return false;
    const CollectiveRow& then = *before[place];
    return signature(then) == signature(other) && signature(then) != signature(mine);
  }

  std::string call_line(int r) const {
    const CollectiveRow& c = f_.calls.at(r);
    return detail::concat(call_text(c), from_text(c), " (", c.state, ")");
  }

  std::string last_call_line(int r) const {
    const RankCalls& c = calls_.at(r);
    const CollectiveRow& last = *c.by_seq.rbegin()->second;
    return detail::concat("#", last.collective_seq, " ", call_text(last), from_text(last), " (", last.state, ")");
  }

  std::string head() const {
    return detail::concat("Group '", f_.group, "' collective #", f_.seq, ": ", match_class_name(f_.cls), ". ");
  }

  std::string describe() const {
    std::string text = head();
    switch (f_.cls) {
      case MatchClass::MissingRanks: describe_missing(text); break;
      case MatchClass::TypeMismatch:
      case MatchClass::SizeMismatch:
      case MatchClass::DtypeMismatch: describe_disagreement(text); break;
      case MatchClass::UnknownValues: describe_unknown(text); break;
      case MatchClass::StateMismatch: describe_states(text); break;
      case MatchClass::FullyMatched: break;
    }
    return text + dead_text();
  }

  // The describe_* append the finding of their class to `text`.
  void describe_missing(std::string& text) const {
    const std::vector<int>& c = f_.culprits;
    if (stuck_earlier_) {
      text += detail::concat(ranks_text(f_.others),
                             " timed out in an earlier collective (last: ", last_call_line(f_.others.front()),
                             "), waiting for ", lower_ranks(c), ", which went on to #", f_.seq, " ",
                             call_line(c.front()), ".") +
              silent_text(c);
    } else {
      text += detail::concat(ranks_text(c), " never called ", call_text(f_.calls.at(f_.others.front())), " #", f_.seq,
                             ", which ", lower_ranks(f_.others), " called", from_text(f_.calls.at(f_.others.front())),
                             " (", f_.calls.at(f_.others.front()).state, ").");
      for (int r : c)
        text += detail::concat(" Rank ", r, "'s last call: ", last_call_line(r), ".");
    }
  }

  void describe_disagreement(std::string& text) const {
    const std::vector<int>& c = f_.culprits;
    const CollectiveRow& theirs = f_.calls.at(f_.others.front());
    const CollectiveRow& mine = f_.calls.at(c.front());
    if (f_.skipped) {
      text += detail::concat(ranks_text(c), " skipped a collective: ", c.size() > 1 ? "they" : "it", " never called ",
                             call_text(theirs), from_text(theirs), ", which ", lower_ranks(f_.others), " called as #",
                             f_.seq, "; ", c.size() > 1 ? "their" : "its", " #", f_.seq, " is ", call_text(mine),
                             from_text(mine), ".");
    } else if (left_loop_) {
      text += detail::concat(ranks_text(c), " left the training loop (", c.size() > 1 ? "their" : "its", " #", f_.seq,
                             " is ", call_text(mine), from_text(mine), ", outside any step) while ",
                             lower_ranks(f_.others), " called ", call_text(theirs), from_text(theirs),
                             ": ranks with uneven inputs (fewer batches) leave the loop early; train under "
                             "DDP's join (--join), or give every rank the same number of batches.");
    } else {
      text += detail::concat(ranks_text(c), " called ", call_text(mine), from_text(mine), " where ",
                             lower_ranks(f_.others), " called ", call_text(theirs), from_text(theirs));
      if (deviated_)
        text += detail::concat(" (at that point of iteration ", mine.iteration - 1, ", ", lower_ranks(c), " called ",
                               call_text(theirs), " too: ", c.size() > 1 ? "they" : "it", " changed, not ",
                               lower_ranks(f_.others), ")");
      if (undecided_) text += "; the records do not say which side is wrong";
      text += ". Every rank must call the same collectives with the same sizes and dtypes in the same order.";
    }
  }

  void describe_unknown(std::string& text) const {
    const CollectiveRow& odd = f_.calls.at(unknown_rank_);
    text += detail::concat("Rank ", unknown_rank_, "'s record names ", unknown_,
                           ", which no PyTorch or ddpscope writes (a damaged dump, or a newer format), so its "
                           "call cannot be compared with the others'. Rank ",
                           unknown_rank_, " recorded ", call_text(odd), " (", odd.state, ")");
    for (int r : f_.others)
      if (r != unknown_rank_) {
        text += detail::concat("; rank ", r, " recorded ", call_text(f_.calls.at(r)), " (", f_.calls.at(r).state, ")");
        break;
      }
    text += ".";
  }

  void describe_states(std::string& text) const {
    const std::vector<int>& c = f_.culprits;
    if (never_started_) {
      // Issued and never begun: the rank stopped there (a stopped or killed CPU rank
      // leaves this too), or work queued ahead of it on its stream or backend held it.
      text += detail::concat(ranks_text(c), " never started ", call_text(f_.calls.at(c.front())),
                             from_text(f_.calls.at(c.front())), " (still scheduled there), which ",
                             lower_ranks(f_.others), " started and waited in: issued there, it never began (",
                             c.size() > 1 ? "they" : "the rank", " stopped, or work queued ahead of it held it up).");
    } else if (silent_went_on_) {
      text += detail::concat(ranks_text(c), " completed ", call_text(f_.calls.at(c.front())),
                             " and went on (last: ", last_call_line(c.front()), "); ", lower_ranks(f_.others),
                             " never completed it and timed out waiting.") +
              silent_text(c);
    } else {
      text += detail::concat(ranks_text(c), " never completed ", call_text(f_.calls.at(c.front())),
                             from_text(f_.calls.at(c.front())), ", which ", lower_ranks(f_.others), " completed.");
    }
  }

  // Ranks whose record of the finding came only by their dump while other ranks' were
  // streamed: they could not reach the collector while the job ran.
  std::vector<int> cut_off(const std::vector<int>& ranks) const {
    std::vector<int> cut;
    bool streamed = false;
    for (int r : ranks) {
      const std::string& source = f_.calls.at(r).source;
      if (source == "stream") streamed = true;
      if (source == "dump") cut.push_back(r);
    }
    return streamed && cut.size() < ranks.size() ? cut : std::vector<int>{};
  }

  // Ranks whose own timeout reached the run file only through their dump while another
  // rank's timeout came over the stream: the records of the call itself may have left
  // before the link went down, the timeout 4 s later could not.
  std::vector<int> timeout_cut_off(const std::vector<int>& ranks) const {
    std::vector<int> cut;
    bool streamed = false;
    for (int r : ranks) {
      if (timeout_streamed_.count(r))
        streamed = true;
      else if (timeout_dumped_.count(r))
        cut.push_back(r);
    }
    return streamed ? cut : std::vector<int>{};
  }

  // Every rank called the last collective alike and it never completed.
  std::string describe_all_waiting() {
    std::vector<int> waiting, silent;
    for (const auto& [rank, call] : f_.calls)
      if (call.state_order() < 2) (timed_out_.count(rank) || timed_out_.empty() ? waiting : silent).push_back(rank);
    const CollectiveRow& any = f_.calls.begin()->second;
    std::string text = head();
    if (!silent.empty()) {
      f_.culprits = silent, f_.others = waiting;
      text += detail::concat("Every rank called ", call_text(any), from_text(any), "; ", lower_ranks(waiting),
                             " timed out waiting in it.") +
              silent_text(silent);
    } else if (const std::vector<int> cut = cut_off(waiting); !cut.empty()) {
      blame_cut(cut, waiting);
      text += detail::concat("Every rank called ", call_text(any), from_text(any), " and ", lower_ranks(waiting),
                             " never completed it. ", ranks_text(cut),
                             "'s records of it reached the run file only "
                             "through ",
                             cut.size() > 1 ? "their dumps" : "its dump", cut_words(cut));
    } else if (const std::vector<int> late_cut = timeout_cut_off(waiting); !late_cut.empty()) {
      blame_cut(late_cut, waiting);
      text += detail::concat("Every rank called ", call_text(any), from_text(any), " and ", lower_ranks(waiting),
                             " never completed it. ", ranks_text(late_cut),
                             "'s timeout in it reached the run file only "
                             "through ",
                             late_cut.size() > 1 ? "their dumps" : "its dump", ", the others' by the stream",
                             cut_words(late_cut));
    } else {
      f_.others = waiting;
      text += detail::concat("Every rank called ", call_text(any), from_text(any), " and ", lower_ranks(waiting),
                             " never completed it; no rank's records say which one stalled it.");
    }
    if (dead_rank_ >= 0 && calls_.count(dead_rank_) &&
        std::find(f_.culprits.begin(), f_.culprits.end(), dead_rank_) == f_.culprits.end())
      f_.culprits.insert(f_.culprits.begin(), dead_rank_);
    return text + dead_text();
  }

  void blame_cut(const std::vector<int>& cut, const std::vector<int>& waiting) {
    f_.culprits = cut;
    for (int r : waiting)
      if (std::find(cut.begin(), cut.end(), r) == cut.end()) f_.others.push_back(r);
  }

  static std::string cut_words(const std::vector<int>& cut) {
    return detail::concat(": ", cut.size() > 1 ? "their links" : "its link",
                          " to the collector had stopped, as the link to the other ranks would have "
                          "(a host or network cut off; the likely culprit).");
  }

  // Why ranks that never timed out on time are the likely culprits.
  std::string silent_text(const std::vector<int>& ranks) const {
    std::string text;
    std::vector<int> quiet;
    for (int r : ranks) {
      if (const auto it = late_.find(r); it != late_.end())
        text += detail::concat(" Rank ", r, " did not run for ", it->second / 100'000'000 / 10.0,
                               " s while the others waited (its watchdog woke that late: stopped, or starved of "
                               "CPU; the likely culprit).");
      else
        quiet.push_back(r);
    }
    if (!quiet.empty())
      text += detail::concat(" ", ranks_text(quiet),
                             quiet.size() > 1 ? " never timed out themselves" : " never timed out itself",
                             ": stopped, stuck inside the transfer, or cut off (the likely culprit).");
    return text;
  }

  // "Group 'world' collective #13: missing ranks. Rank 0 died by signal 9 (Killed) after
  // #13 ... (the likely culprit). <what the others did>"
  void put_dead_first() {
    const std::string h = head();
    f_.verdict = h +
                 detail::concat("Rank ", dead_rank_, " died by ", dead_signal_.empty() ? "a signal" : dead_signal_,
                                " after ", last_call_line(dead_rank_), " (the likely culprit). ") +
                 f_.verdict.substr(h.size());
    f_.culprits.erase(std::remove(f_.culprits.begin(), f_.culprits.end(), dead_rank_), f_.culprits.end());
    f_.culprits.insert(f_.culprits.begin(), dead_rank_);
    f_.others.erase(std::remove(f_.others.begin(), f_.others.end(), dead_rank_), f_.others.end());
  }

  std::string dead_text() const {
    if (dead_first_) return {};
    if (dead_rank_ < 0 || std::find(f_.members.begin(), f_.members.end(), dead_rank_) == f_.members.end()) return {};
    return detail::concat(" Rank ", dead_rank_, " died ", dead_signal_.empty() ? "by a signal" : "by " + dead_signal_,
                          calls_.count(dead_rank_) ? " after " + last_call_line(dead_rank_) : std::string(), ".");
  }

  GroupFinding f_;
  std::map<int, RankCalls> calls_;
  const std::set<int>& timed_out_;
  const std::map<int, int64_t>& late_;
  int dead_rank_;
  std::string dead_signal_;
  bool dead_first_ = false;
  bool stuck_earlier_ = false, silent_went_on_ = false, left_loop_ = false, deviated_ = false, undecided_ = false;
  bool never_started_ = false;
  int unknown_rank_ = -1;
  std::string unknown_;
  std::set<int> timeout_streamed_, timeout_dumped_;  // ranks whose timeout dump came by each way
};

}  // namespace

const char* match_class_name(MatchClass c) {
  switch (c) {
    case MatchClass::FullyMatched: return "fully matched";
    case MatchClass::MissingRanks: return "missing ranks";
    case MatchClass::TypeMismatch: return "collective type mismatch";
    case MatchClass::SizeMismatch: return "size mismatch";
    case MatchClass::DtypeMismatch: return "dtype mismatch";
    case MatchClass::StateMismatch: return "state mismatch";
    case MatchClass::UnknownValues: return "unknown values";
  }
  return "?";
}

std::string call_text(const CollectiveRow& row) {
  std::string s = row.op;
  const std::string in = tensors_text(row.input_sizes, row.input_dtypes);
  if (!in.empty()) s += " " + in;
  if (!row.output_sizes.empty() && (row.output_sizes != row.input_sizes || row.output_dtypes != row.input_dtypes))
    s += " -> " + tensors_text(row.output_sizes, row.output_dtypes);
  return s;
}

namespace {

// Ranks whose watchdog fired on time: alive and waiting when their timeout passed. A
// watchdog that fired long after its deadline (more than half the timeout and 2 s late:
// it looks twice per timeout) belonged to a rank that was not running then (stopped,
// starved of CPU) and continued later: that rank is in `late`, not in the result.
std::set<int> timed_out_on_time(const FlightData& data, std::map<int, int64_t>& late) {
  std::set<int> on_time;
  for (const FlightDumpRow& d : data.dumps) {
    // A process that could not run while a collective of its was pending (its watchdog
    // woke that late) stalled the others, whatever its dump's trigger.
    if (d.stall_ns > 0 && d.stall_end_ns > 0 && data.by_rank.count(d.rank)) {
      for (const CollectiveRow& r : data.by_rank.at(d.rank))
        // A stall that overlapped one of its collectives and was long for it (a quarter
        // of its timeout, a second at least: a busy machine delays wake-ups less).
        if (r.t_created_ns > 0 && r.t_created_ns < d.stall_end_ns &&
            (r.t_completed_ns == 0 || r.t_completed_ns >= d.stall_end_ns - d.stall_ns) &&
            d.stall_ns >= std::max<int64_t>(1'000'000'000, r.timeout_ms * 250'000)) {
          late[d.rank] = std::max(late[d.rank], d.stall_ns);
          break;
        }
    }
    if (d.trigger != "timeout") continue;
    const CollectiveRow* waited = nullptr;
    if (const auto it = data.by_rank.find(d.rank); it != data.by_rank.end()) {
      for (const CollectiveRow& r : it->second)
        if (r.state_order() == 1 && r.timeout_ms > 0 && r.t_started_ns > 0 && r.t_started_ns <= d.t_ns &&
            (!waited || r.t_started_ns < waited->t_started_ns))
          waited = &r;
    }
    if (!waited || d.t_ns <= 0) {
      on_time.insert(d.rank);
      continue;
    }
    const int64_t deadline = waited->t_started_ns + waited->timeout_ms * 1'000'000;
    const int64_t slack = waited->timeout_ms * 500'000 + 2'000'000'000;
    if (d.t_ns <= deadline + slack)
      on_time.insert(d.rank);
    else
      late[d.rank] = std::max(late[d.rank], d.t_ns - deadline);
  }
  for (const auto& [rank, by] : late)
    on_time.erase(rank);
  return on_time;
}

// The records as they stood when the first rank's watchdog fired on time: the job failed
// then. What ranks did after it (a stopped rank continued at teardown finishes the
// collective the others gave up on) is not what stalled it.
// Empty when no rank timed out: the records stand as they are (no copy of a million rows).
std::optional<FlightData> snapshot_at(const FlightData& data, const std::set<int>& timed_out) {
  int64_t cutoff = 0;
  for (const FlightDumpRow& d : data.dumps)
    if (timed_out.count(d.rank) && d.t_ns > 0 && (cutoff == 0 || d.t_ns < cutoff)) cutoff = d.t_ns;
  if (cutoff == 0) return std::nullopt;
  FlightData snapshot = data;
  for (auto& [rank, rows] : snapshot.by_rank) {
    std::vector<CollectiveRow> kept;
    for (CollectiveRow r : rows) {
      if (r.t_created_ns > cutoff) continue;
      if (r.t_completed_ns > cutoff) r.t_completed_ns = 0, r.state = "started";
      if (r.t_started_ns > cutoff) r.t_started_ns = 0, r.state = "scheduled";
      kept.push_back(std::move(r));
    }
    rows = std::move(kept);
  }
  return snapshot;
}

}  // namespace

FlightVerdict analyze_flight(const FlightData& all, int dead_rank, const std::string& dead_signal,
                             int64_t live_now_ns) {
  FlightVerdict v;
  std::map<int, int64_t> late;
  const std::set<int> timed_out = timed_out_on_time(all, late);
  const std::optional<FlightData> snapshot = snapshot_at(all, timed_out);
  const FlightData& data = snapshot ? *snapshot : all;
  // Groups in the order first seen (the world first: every rank creates it first).
  std::vector<std::string> names;
  for (const auto& [rank, rows] : data.by_rank)
    for (const CollectiveRow& r : rows)
      if (!r.is_p2p() && std::find(names.begin(), names.end(), r.pg_name) == names.end()) names.push_back(r.pg_name);
  std::vector<GroupFinding> quiet;
  for (const std::string& name : names) {
    GroupFinding f = GroupMatcher(name, data, timed_out, late, dead_rank, dead_signal).run();
    const bool disagree =
        f.cls == MatchClass::TypeMismatch || f.cls == MatchClass::SizeMismatch || f.cls == MatchClass::DtypeMismatch;
    if (live_now_ns > 0 && !disagree && !f.verdict.empty()) {
      int64_t newest = 0;
      for (const auto& [rank, call] : f.calls)
        newest = std::max({newest, call.t_created_ns, call.t_started_ns});
      if (live_now_ns - newest < 5'000'000'000) f.verdict.clear(), f.culprits.clear();  // still in flight
    }
    (f.verdict.empty() ? quiet : v.groups).push_back(std::move(f));
  }
  // A mismatch explains a hang better than a collective every rank is still in.
  std::stable_sort(v.groups.begin(), v.groups.end(), [](const GroupFinding& a, const GroupFinding& b) {
    return (a.cls != MatchClass::FullyMatched) > (b.cls != MatchClass::FullyMatched);
  });
  for (const GroupFinding& f : v.groups) {
    v.verdict += (v.verdict.empty() ? "" : " ") + f.verdict;
    for (int r : f.culprits)
      if (std::find(v.culprits.begin(), v.culprits.end(), r) == v.culprits.end()) v.culprits.push_back(r);
  }
  // Point-to-point ops, group by group.
  std::vector<std::string> p2p_names;
  for (const auto& [rank, rows] : data.by_rank)
    for (const CollectiveRow& r : rows)
      if (r.is_p2p() && std::find(p2p_names.begin(), p2p_names.end(), r.pg_name) == p2p_names.end())
        p2p_names.push_back(r.pg_name);
  for (const std::string& name : p2p_names) {
    GroupFinding f = judge_p2p(name, data);
    if (f.verdict.empty()) {
      if (f.seq >= 0) quiet.push_back(std::move(f));
      continue;
    }
    v.verdict += (v.verdict.empty() ? "" : " ") + f.verdict;
    for (int r : f.culprits)
      if (std::find(v.culprits.begin(), v.culprits.end(), r) == v.culprits.end()) v.culprits.push_back(r);
    v.groups.push_back(std::move(f));
  }
  for (GroupFinding& f : quiet)
    v.groups.push_back(std::move(f));
  return v;
}

FlightData records_at_failure(FlightData data) {
  std::map<int, int64_t> late;
  std::optional<FlightData> snapshot = snapshot_at(data, timed_out_on_time(data, late));
  return snapshot ? std::move(*snapshot) : std::move(data);
}

}  // namespace ddpscope::probes
