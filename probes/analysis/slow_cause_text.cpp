#include "slow_cause_text.h"

#include <algorithm>

#include "ddpscope/plural.h"
#include "ddpscope/printf_string.h"

namespace ddpscope::probes {
namespace {

// "1", "1 and 2", "0, 1 and 2".
std::string ranks_listed(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return out;
}

// Where the time went, in words a user acts on.
std::string phase_words(const SlowStraggler& s) {
  if (s.phase == "outside_step")
    return s.for_want_of_cpu()
               ? "outside the training step (outside forward, backward and the optimizer)"
               : "outside the training step (outside forward, backward and the optimizer: input loading, logging?)";
  if (s.phase == "forward") return "in forward";
  if (s.phase == "optimizer") return "in the optimizer step";
  if (s.phase == "host") return "with its GPU idle, waiting for the CPU to launch work";
  if (!s.where.empty()) return "in backward, most of it before the gradient of '" + s.where + "' was ready";
  return "in backward";
}

// " Rank 0 waits 19.8 ms per iteration for it in allreduce." or, with several waiting,
// " Ranks 0, 2 and 3 wait 18.6 to 21.7 ms ..." (" The other 1023 ranks wait ..." past six).
std::string waiters(const SlowCause& cause) {
  std::vector<const RankWait*> waiting;
  for (const RankWait& w : cause.waits)
    if (w.rank != cause.straggler.rank && w.wait_ms_per_iteration >= cause.noise_ms) waiting.push_back(&w);
  if (waiting.empty()) return {};
  const auto [low, high] = std::minmax_element(waiting.begin(), waiting.end(), [](auto* a, auto* b) {
    return a->wait_ms_per_iteration < b->wait_ms_per_iteration;
  });
  std::string who;
  if (waiting.size() == 1) {
    who = printf_string("Rank %d waits %.1f ms", waiting[0]->rank, waiting[0]->wait_ms_per_iteration);
  } else {
    if (waiting.size() > 6) {
      who = waiting.size() + 1 == cause.waits.size() ? printf_string("The other %zu ranks", waiting.size())
                                                     : printf_string("%zu ranks", waiting.size());
    } else {
      std::vector<int> ranks;
      for (const RankWait* w : waiting)
        ranks.push_back(w->rank);
      who = "Ranks " + ranks_listed(ranks);
    }
    const std::string from = printf_string("%.1f", (*low)->wait_ms_per_iteration);
    const std::string to = printf_string("%.1f", (*high)->wait_ms_per_iteration);
    who += " wait " + (from == to ? from : from + " to " + to) + " ms";
  }
  return " " + who + " per iteration for it" +
         (cause.straggler.waited_in.empty() ? "." : " in " + cause.straggler.waited_in + ".");
}

// No rank stands out: say so, and whether the ranks wait for each other by turns.
std::string no_straggler(const SlowCause& cause) {
  std::string out = printf_string(
      "No rank stands out over %s: no rank is the one the others wait for in most "
      "iterations and costs them over %.1f ms per iteration",
      count_of(cause.iterations, "iteration").c_str(), cause.noise_ms);
  double wait = 0;
  for (const RankWait& w : cause.waits)
    wait += w.wait_ms_per_iteration / static_cast<double>(cause.waits.size());
  if (wait < cause.noise_ms) return out + ".";
  out += printf_string(
      ". The ranks wait %.1f ms per iteration for each other (of %.1f ms), taking turns: their pace varies from "
      "iteration to iteration",
      wait, cause.iteration_ms);
  // Measured, where the run recorded it, rather than guessed.
  if (cause.cpu_wait_ms >= 0.5 * wait)
    return out + printf_string(
                     ": their threads waited %.1f ms per iteration for a core (the host runs more busy threads "
                     "than it has cores).",
                     cause.cpu_wait_ms);
  return out + " (a shared or busy machine?).";
}

}  // namespace

// " Stalled: iteration 60, rank 1, 30.0 s (left out)." for the largest stall, and how many more.
std::string stalls_said(const SlowCause& cause) {
  if (cause.stalls.empty()) return {};
  const SlowStall& st = cause.stalls.front();
  std::string out = printf_string(" Stalled: iteration %lld, rank %d, %.1f s", static_cast<long long>(st.iteration),
                                  st.rank, st.lost_ms / 1000);
  if (cause.stalls.size() > 1) out += printf_string(", and %zu more", cause.stalls.size() - 1);
  return out + " (left out).";
}

// " Iterations 21 to 39 left out: rank 1 did not run them (under join, a rank out of data
// only shadows the others' collectives)." when some rank did not run some iterations.
static std::string absent_said(const SlowCause& cause) {
  const std::vector<int64_t>& left = cause.not_every_rank;
  if (left.empty()) return {};
  const bool contiguous = left.back() - left.front() + 1 == static_cast<int64_t>(left.size());
  std::string which = left.size() == 1 ? printf_string("Iteration %lld", static_cast<long long>(left.front()))
                      : contiguous
                          ? printf_string("Iterations %lld to %lld", static_cast<long long>(left.front()),
                                          static_cast<long long>(left.back()))
                          : printf_string("%zu iterations (%lld to %lld)", left.size(),
                                          static_cast<long long>(left.front()), static_cast<long long>(left.back()));
  const std::string who = ranks_listed(cause.absent_ranks);
  return printf_string(
      " %s left out: %s %s did not run %s (under join, a rank out of data only shadows the others' "
      "collectives).",
      which.c_str(), cause.absent_ranks.size() == 1 ? "rank" : "ranks", who.c_str(), left.size() == 1 ? "it" : "them");
}

namespace {

// "From iteration 150 on (109 of the 258 iterations), " when the verdict is over a slowdown
// that began during the run; "From iteration 20 to 35 (...), " when it also ended.
std::string spell_opening(const SlowCause& cause) {
  const SlowSpell& sp = cause.spell;
  if (sp.first < 0) return {};
  const std::string span =
      sp.to_the_end ? printf_string("%lld on", static_cast<long long>(sp.first))
                    : printf_string("%lld to %lld", static_cast<long long>(sp.first), static_cast<long long>(sp.last));
  return printf_string("From iteration %s (%d of the %d iterations), ", span.c_str(), cause.iterations,
                       sp.run_iterations);
}

// The wait for a core is worth saying beside the what-if: over 0.1 ms and 2 % of it.
bool says_give_or_take(const SlowCause& cause) {
  return cause.what_if_give_or_take_ms >= std::max(0.1, 0.02 * cause.what_if_ms);
}

// What the what-if cannot know: how long the ranks would wait for a core without the slowdown
// (said when the run recorded it), or that ranks sharing a host's cores would compute on them at
// the same time.
std::string what_if_caveat(const SlowCause& cause) {
  if (says_give_or_take(cause))
    return printf_string(
        " (give or take %.1f ms: in this run its ranks waited that long per iteration for a core, and without the "
        "slowdown they would wait more or less).",
        cause.what_if_give_or_take_ms);
  if (cause.ranks_share_cores)
    return " (or somewhat more: these ranks share a host's cores, which they would then compute on at the same time).";
  return ".";
}

// " It is late for want of a CPU: its threads waited for a core 1.0 ms ..." when waiting for a
// CPU explains most of the straggler's excess (slow_cause.h): the cause is the host, not the
// rank's work. (Not "of that": its threads' wait, the communication threads' too, can exceed
// the phase's time on its training thread.)
std::string cpu_wait_said(const SlowCause& cause) {
  const SlowStraggler& s = cause.straggler;
  if (!s.for_want_of_cpu()) return {};
  return printf_string(
      " It is late for want of a CPU: its threads waited for a core %.1f ms per iteration there, ready to run "
      "while other threads held the host's cores (the %s: %.1f ms). Its work is not slower: the host runs more "
      "busy threads than it has cores; fewer ranks or threads per host, or nothing else running there, would end "
      "the wait.",
      s.cpu_wait_ms, cause.ranks == 2 ? "other rank's" : "other ranks' (median)", std::max(0.0, s.others_cpu_wait_ms));
}

// No one rank stands out, but some the others wait for, taking turns being last
// (slow_cause_group.h): "Ranks 1 and 2 are the ones the others wait for, ...".
std::string group_verdict(const SlowCause& cause) {
  const SlowGroup& g = cause.late_group;
  const bool one = g.ranks.size() == 1;
  std::vector<int> others;
  double low = 0, high = 0, own = 0;
  for (const RankWait& w : cause.waits) {
    if (std::find(g.ranks.begin(), g.ranks.end(), w.rank) != g.ranks.end()) {
      own = std::max(own, w.wait_ms_per_iteration);
      continue;
    }
    low = others.empty() ? w.wait_ms_per_iteration : std::min(low, w.wait_ms_per_iteration);
    high = std::max(high, w.wait_ms_per_iteration);
    others.push_back(w.rank);
  }
  SlowStraggler as_one;  // for the phase's words
  as_one.phase = g.phase;
  std::string out =
      one ? printf_string(
                "Rank %d is the one the others wait for, though it is the last to arrive by over the noise "
                "in only %d of %d iterations: it spends",
                g.ranks[0], g.iterations, cause.iterations)
          : printf_string(
                "Ranks %s are the ones the others wait for; they take turns being last, so that no one of "
                "them stands out alone: they spend",
                ranks_listed(g.ranks).c_str());
  out += printf_string(
      " %.1f ms per iteration %s, where the %s %.1f ms.", g.phase_ms, phase_words(as_one).c_str(),
      others.size() == 1 ? printf_string("other rank, %d, spends", others[0]).c_str() : "other ranks spend (median)",
      g.others_phase_ms);
  const std::string from = printf_string("%.1f", low), to = printf_string("%.1f", high);
  const std::string waited = (others.size() == 1 ? "waits " : "wait ") + (from == to ? from : from + " to " + to);
  out += printf_string(" %s %s %s ms per iteration for %s; %s %.1f ms.", others.size() == 1 ? "Rank" : "Ranks",
                       ranks_listed(others).c_str(), waited.c_str(), one ? "it" : "them",
                       one ? "it waits" : "they wait", own);
  out += printf_string(" Without that, an iteration would take about %.1f ms instead of %.1f ms", cause.what_if_ms,
                       cause.iteration_ms);
  return out + what_if_caveat(cause);
}

// The verdict on the ranks: the straggler, or why there is none.
std::string straggler_verdict(const SlowCause& cause) {
  if (!cause.not_analysed.empty()) return "No verdict: " + cause.not_analysed + "." + stalls_said(cause);
  const SlowStraggler& s = cause.straggler;
  if (s.rank < 0 && !cause.late_group.ranks.empty()) return group_verdict(cause) + stalls_said(cause);
  if (s.rank < 0) return no_straggler(cause) + stalls_said(cause);
  std::string out =
      spell_opening(cause) + printf_string("%s %d gates %d of %d%s: %sit spends %.1f ms per iteration %s, where the ",
                                           cause.spell.first >= 0 ? "rank" : "Rank", s.rank, s.iterations,
                                           cause.iterations, cause.spell.first >= 0 ? "" : " iterations",
                                           s.iterations < cause.iterations ? "in those, " : "", s.rank_phase_ms,
                                           phase_words(s).c_str());
  out += printf_string("%s %.1f ms.", cause.ranks == 2 ? "other rank spends" : "other ranks spend (median)",
                       s.others_phase_ms);
  out += cpu_wait_said(cause);
  out += waiters(cause);
  out += printf_string(" Without that, an iteration would take about %.1f ms instead of %.1f ms", cause.what_if_ms,
                       cause.iteration_ms);
  out += what_if_caveat(cause);
  if (cause.spell.first >= 0)
    out +=
        printf_string(" The %s took %.1f ms.",
                      cause.spell.to_the_end
                          ? printf_string("iterations before %lld", static_cast<long long>(cause.spell.first)).c_str()
                          : "other iterations",
                      cause.spell.other_iterations_ms);
  return out + stalls_said(cause);
}

}  // namespace

std::string slow_cause_verdict(const SlowCause& cause) {
  const std::string rest = straggler_verdict(cause) + absent_said(cause);
  return cause.slow_link ? "Slow link: " + cause.slow_link->text + ". " + rest : rest;
}

std::string slow_stall_sentence(const SlowStall& st) {
  return printf_string("iteration %lld: rank %d stalled %.1f s (%s); rank %d waited in %s.",
                       static_cast<long long>(st.iteration), st.rank, st.lost_ms / 1000, st.phase.c_str(),
                       st.waiting_rank, st.collective.c_str());
}

std::string slow_cause_text(const SlowCause& cause) {
  std::string out = slow_cause_verdict(cause) + "\n";
  for (const SlowStall& st : cause.stalls)
    out += "Stall: " + slow_stall_sentence(st) + " Left out of the means.\n";
  for (int64_t i : cause.cut_short)
    out +=
        printf_string("Iteration %lld was cut short by an error: left out of the means.\n", static_cast<long long>(i));
  if (cause.waits.empty()) return out;
  out += cause.spell.first >= 0 ? printf_string("\nPer rank, ms per iteration (mean of the %s of that stretch):\n",
                                                count_of(cause.iterations, "iteration").c_str())
                                : printf_string("\nPer rank, ms per iteration (mean of %s past the first):\n",
                                                count_of(cause.iterations, "iteration").c_str());
  out += "  rank  waits for the others  the job waited for it  last to arrive (iterations)\n";
  for (const RankWait& w : cause.waits)
    out += printf_string("  %4d  %20.2f  %21.2f  %d\n", w.rank, w.wait_ms_per_iteration, w.lost_ms_per_iteration,
                         w.last_in);
  return out;
}

// The straggler's part of `why --json` (null: none).
static nlohmann::ordered_json straggler_json(const SlowStraggler& s) {
  if (s.rank < 0) return nullptr;
  return {{"rank", s.rank},
          {"phase", s.phase},
          {"where", s.where.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(s.where)},
          {"extra_ms_per_iteration", s.extra_ms_per_iteration},
          {"iterations", s.iterations},
          {"phase_ms", s.rank_phase_ms},
          {"others_phase_ms", s.others_phase_ms},
          {"lost_ms_per_iteration", s.lost_ms_per_iteration},
          {"waited_in", s.waited_in},
          // Its wait for a CPU in the phase, and the others' (null: not recorded).
          {"cpu_wait_ms", s.cpu_wait_ms >= 0 ? nlohmann::ordered_json(s.cpu_wait_ms) : nullptr},
          {"others_cpu_wait_ms", s.others_cpu_wait_ms >= 0 ? nlohmann::ordered_json(s.others_cpu_wait_ms) : nullptr},
          {"for_want_of_cpu", s.for_want_of_cpu()}};
}

nlohmann::ordered_json slow_cause_json(const SlowCause& cause) {
  nlohmann::ordered_json j;
  j["verdict"] = slow_cause_verdict(cause);
  if (!cause.not_analysed.empty()) j["not_analysed"] = cause.not_analysed;
  j["ranks"] = cause.ranks;
  j["iterations"] = cause.iterations;
  j["last_iteration"] = cause.by_iteration.empty() ? nlohmann::ordered_json()
                                                   : nlohmann::ordered_json(cause.by_iteration.back().iteration);
  j["iteration_ms"] = cause.iteration_ms;
  j["noise_ms"] = cause.noise_ms;
  j["straggler"] = straggler_json(cause.straggler);
  j["waits"] = nlohmann::ordered_json::array();
  for (const RankWait& w : cause.waits)
    j["waits"].push_back({{"rank", w.rank},
                          {"wait_ms_per_iteration", w.wait_ms_per_iteration},
                          {"lost_ms_per_iteration", w.lost_ms_per_iteration},
                          {"last_to_arrive", w.last_in}});
  j["what_if_ms"] = cause.what_if_ms;
  j["what_if_give_or_take_ms"] =
      says_give_or_take(cause) ? nlohmann::ordered_json(cause.what_if_give_or_take_ms) : nullptr;
  j["ranks_share_cores"] = cause.ranks_share_cores;
  // With no straggler: the ranks' threads' wait for a core per iteration (null: not recorded).
  j["cpu_wait_ms"] = cause.cpu_wait_ms >= 0 ? nlohmann::ordered_json(cause.cpu_wait_ms) : nullptr;
  j["stalls"] = nlohmann::ordered_json::array();
  for (const SlowStall& st : cause.stalls)
    j["stalls"].push_back({{"iteration", st.iteration},
                           {"rank", st.rank},
                           {"lost_ms", st.lost_ms},
                           {"phase", st.phase},
                           {"waited_in", st.collective},
                           {"waiting_rank", st.waiting_rank}});
  j["cut_short"] = cause.cut_short;
  j["not_every_rank"] = {{"iterations", cause.not_every_rank}, {"absent_ranks", cause.absent_ranks}};
  // With no straggler: ranks the others wait for, taking turns being last (null: none).
  const SlowGroup& g = cause.late_group;
  j["late_group"] = g.ranks.empty() ? nlohmann::ordered_json()
                                    : nlohmann::ordered_json{{"ranks", g.ranks},
                                                             {"phase", g.phase},
                                                             {"phase_ms", g.phase_ms},
                                                             {"others_phase_ms", g.others_phase_ms},
                                                             {"others_wait_ms_per_iteration", g.others_wait_ms},
                                                             {"iterations", g.iterations}};
  // A slowdown that began or ended during the run: the verdict's iterations (null: all).
  if (cause.spell.first >= 0) {
    j["spell"] = {{"first_iteration", cause.spell.first},
                  {"last_iteration", cause.spell.last},
                  {"run_iterations", cause.spell.run_iterations},
                  {"to_the_end", cause.spell.to_the_end},
                  {"other_iterations_ms", cause.spell.other_iterations_ms}};
  } else {
    j["spell"] = nullptr;
  }
  if (cause.slow_link) {
    j["slow_link"] = {
        {"rank", cause.slow_link->rank >= 0 ? nlohmann::ordered_json(cause.slow_link->rank) : nlohmann::ordered_json()},
        {"host", cause.slow_link->host},
        {"slow_gbps", cause.slow_link->slow_gbps},
        {"others_gbps", cause.slow_link->others_gbps},
        {"measured", cause.slow_link->measured},
        {"text", cause.slow_link->text}};
  } else {
    j["slow_link"] = nullptr;
  }
  // Each iteration's own straggler: the rank whose work cost the job most in it (null: none
  // over the noise).
  j["by_iteration"] = nlohmann::ordered_json::array();
  for (const SlowIteration& it : cause.by_iteration)
    j["by_iteration"].push_back({{"iteration", it.iteration},
                                 {"rank", it.rank >= 0 ? nlohmann::ordered_json(it.rank) : nlohmann::ordered_json()},
                                 {"lost_ms", it.lost_ms}});
  return j;
}

}  // namespace ddpscope::probes
