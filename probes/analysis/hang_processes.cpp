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

void add_unanswering_ranks(HangReport& report, const std::vector<RankRow>& ranks, const std::map<int, char>& states) {
  std::string text;
  for (const auto& r : ranks) {
    const auto it = states.find(r.rank);
    if (it == states.end()) continue;
    // A rank that finished its iterations has nothing left to answer for: its process ends.
    const auto st = std::find_if(report.ranks.begin(), report.ranks.end(),
                                 [&](const RankHangState& s) { return s.rank == r.rank; });
    if (st != report.ranks.end() && st->phase == "done") continue;
    const char state = it->second;
    std::string why;
    if (state == 'T')
      why = "is stopped by a signal (SIGSTOP or SIGTSTP), so it runs no code";
    else if (state == 't')
      why = "is stopped by a debugger";
    else if (state == 'Z' || state == 0)
      why = "has exited";
    else
      continue;
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

}  // namespace ddpscope::probes
