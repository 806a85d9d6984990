#include "hang_processes.h"

#include <unistd.h>

#include <algorithm>

#include "ddpscope/error.h"
#include "ddpscope/process_state.h"

namespace ddpscope::probes {

std::map<int, char> rank_process_states(const std::vector<RankRow>& ranks) {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::map<int, char> states;
  for (const auto& r : ranks)
    if (r.host == name && r.pid > 0) states[r.rank] = process_state(r.pid);
  return states;
}

namespace {

// Why a rank in `state` cannot answer; empty when it can (or is not known not to).
std::string why_not_answering(char state, bool at_the_end) {
  if (at_the_end) {
    if (state == 'T') return "was stopped by a signal (SIGSTOP or SIGTSTP) when the job was ended, so it ran no code";
    if (state == 't') return "was stopped by a debugger when the job was ended";
    return {};
  }
  if (state == 'T') return "is stopped by a signal (SIGSTOP or SIGTSTP), so it runs no code";
  if (state == 't') return "is stopped by a debugger";
  if (state == 'Z' || state == 0) return "has exited";
  return {};
}

void add_ranks_not_answering(HangReport& report, const std::vector<RankRow>& ranks, const std::map<int, char>& states,
                             bool at_the_end) {
  std::string text;
  for (const auto& r : ranks) {
    const auto it = states.find(r.rank);
    if (it == states.end()) continue;
    // A rank that finished its iterations has nothing left to answer for: its process ends.
    const auto st = std::find_if(report.ranks.begin(), report.ranks.end(),
                                 [&](const RankHangState& s) { return s.rank == r.rank; });
    if (st != report.ranks.end() && st->phase == HangPhase::Done) continue;
    const std::string why = why_not_answering(it->second, at_the_end);
    if (why.empty()) continue;
    report.unanswering.push_back({r.rank, why});
    text += detail::concat(" Rank ", r.rank, " did not answer: its process (pid ", r.pid, ") ", why,
                           "; its last events above say where it stopped.");
  }
  if (text.empty()) return;
  if (report.verdict.empty()) {
    report.verdict = text.substr(1);
    report.findings.insert(report.findings.begin(), report.verdict);
  } else {
    report.verdict += text;
    if (!report.findings.empty()) report.findings.front() = report.verdict;
  }
}

}  // namespace

void add_unanswering_ranks(HangReport& report, const std::vector<RankRow>& ranks, const std::map<int, char>& states) {
  add_ranks_not_answering(report, ranks, states, false);
}

void add_ranks_stopped_at_the_end(HangReport& report, const std::vector<RankRow>& ranks) {
  std::map<int, char> states;
  for (const auto& r : ranks)
    if (r.end_state.size() == 1) states[r.rank] = r.end_state[0];
  add_ranks_not_answering(report, ranks, states, true);
}

}  // namespace ddpscope::probes
