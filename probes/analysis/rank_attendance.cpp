#include "rank_attendance.h"

#include <algorithm>
#include <map>
#include <set>

#include "ddpscope/error.h"
#include "ddpscope/plural.h"
#include "flight_records.h"

namespace ddpscope::probes {

RankAttendance rank_attendance(RunStoreReader& run) {
  RankAttendance a;
  const RunRow row = run.run();
  a.world_size = row.world_size;
  a.running = row.status == "running";
  a.attempts = run.attempts();
  std::set<int> present;
  for (const auto& r : run.ranks())
    present.insert(r.rank);
  const bool collected = !a.attempts.empty() || row.config_json.find(R"("job":"collect")") != std::string::npos;
  if (collected) {
    int64_t present_in_world = 0;
    for (int r : present)
      present_in_world += r >= 0 && r < a.world_size;
    a.never_joined_count = a.world_size - present_in_world;
    for (int r = 0; r < a.world_size && a.never_joined.size() < RankAttendance::kListed; ++r)
      if (!present.count(r)) a.never_joined.push_back(r);
  }
  std::map<int, int64_t> first_join;  // attempt -> its first rank's join
  for (const auto& t : a.attempts) {
    a.attempts_run = std::max(a.attempts_run, t.attempt + 1);
    if (t.joined_ns < 0) continue;
    auto [it, fresh] = first_join.emplace(t.attempt, t.joined_ns);
    if (!fresh) it->second = std::min(it->second, t.joined_ns);
  }
  for (const auto& t : a.attempts)
    if (t.joined_ns >= 0 && t.joined_ns - first_join[t.attempt] > kLateJoinNs)
      a.late.emplace_back(t.rank, t.joined_ns - first_join[t.attempt]);
  return a;
}

namespace {

constexpr size_t kListedAttempts = 8;

// "attempt 1 ended when rank 1 failed (then rank 0)": the first to fail is the likely
// cause, the others lost their peer (attempts count from 1 in words; torchrun's restart
// count from 0).
std::string attempt_end(const RankAttendance& a, int attempt) {
  std::vector<const AttemptRow*> failed;
  bool running = false;
  for (const auto& t : a.attempts) {
    if (t.attempt != attempt) continue;
    if (t.outcome == "failed") failed.push_back(&t);
    running = running || t.outcome.empty();
  }
  std::stable_sort(failed.begin(), failed.end(),
                   [](const AttemptRow* x, const AttemptRow* y) { return x->ended_ns < y->ended_ns; });
  if (failed.empty())
    return detail::concat("attempt ", attempt + 1, running ? " has ranks that never said they ended" : " ended");
  std::string text = detail::concat("attempt ", attempt + 1, " ended when rank ", failed.front()->rank, " failed");
  std::vector<int> then;
  for (size_t i = 1; i < failed.size(); ++i)
    then.push_back(failed[i]->rank);
  std::sort(then.begin(), then.end());
  if (!then.empty()) text += detail::concat(" (then ", ranks_named(then.size(), rank_ranges_text(then)), ")");
  return text;
}

}  // namespace

std::vector<std::string> attendance_findings(const RankAttendance& a) {
  std::vector<std::string> out;
  if (!a.never_joined.empty()) {
    const bool one = a.never_joined_count == 1;
    const std::string who =
        a.never_joined_count > static_cast<int64_t>(a.never_joined.size())
            ? detail::concat(a.never_joined_count, " ranks (", rank_ranges_text(a.never_joined), ", ...)")
            : ranks_named(a.never_joined.size(), rank_ranges_text(a.never_joined));
    out.push_back(detail::concat(who, " of ", a.world_size,
                                 a.running ? (one ? " has not joined yet" : " have not joined yet") : " never joined",
                                 ": the run has nothing from ", one ? "it" : "them",
                                 " (started without the collector's environment, or unable to reach it?)"));
  }
  for (const auto& [rank, late_ns] : a.late)
    out.push_back(detail::concat("rank ", rank, " joined ", static_cast<double>(late_ns / 100'000'000) / 10.0,
                                 " s after the first rank of its attempt"));
  if (a.attempts_run > 1) {
    std::string text = detail::concat("the job ran ", a.attempts_run, " attempts (torchrun restarted it ",
                                      count_of(a.attempts_run - 1, "time"), "): ");
    // The attempts ranks recorded, never every number up to the highest (a rank may claim
    // restart 1,000,000): the latest kListedAttempts before the last, the rest counted.
    std::set<int> recorded;
    for (const auto& t : a.attempts)
      if (t.attempt + 1 < a.attempts_run) recorded.insert(t.attempt);
    const size_t skipped = recorded.size() > kListedAttempts ? recorded.size() - kListedAttempts : 0;
    if (skipped > 0) text += count_of(static_cast<int64_t>(skipped), "earlier attempt") + " not listed; ";
    size_t at = 0;
    for (int attempt : recorded)
      if (at++ >= skipped) text += attempt_end(a, attempt) + "; ";
    const int64_t unrecorded = a.attempts_run - 1 - static_cast<int64_t>(recorded.size());
    if (unrecorded > 0) text += count_of(unrecorded, "earlier attempt") + " left no rank's record; ";
    int64_t first = 1;
    for (const auto& t : a.attempts)
      if (t.attempt == a.attempts_run - 1) first = t.first_iteration;
    out.push_back(text + detail::concat("attempt ", a.attempts_run, "'s iterations are numbered from ", first));
  }
  return out;
}

}  // namespace ddpscope::probes
