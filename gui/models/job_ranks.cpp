#include "job_ranks.h"

#include <QCoreApplication>
#include <map>

namespace ddpscope::gui {

std::vector<JobRankRow> jobRanks(const RunData& run) {
  const auto tr = [](const char* text) { return QCoreApplication::translate("JobRanks", text); };
  std::map<int, JobRankRow> rows;
  for (int r : run.attendance.never_joined)  // the first of them: a world size is only claimed
    rows[r] = {r, {}, -1, -1, 0, run.attendance.running ? tr("not joined yet") : tr("never joined")};
  for (const auto& r : run.ranks) {
    JobRankRow& row = rows[r.rank];
    row = {r.rank,
           QString::fromStdString(r.host),
           r.local_rank,
           r.node,
           1,
           run.run.status == "running" ? tr("running") : tr("ended")};
  }
  for (const auto& a : run.attendance.attempts) {  // by rank, then attempt: the latest wins
    JobRankRow& row = rows[a.rank];
    row.rank = a.rank;
    row.attempt = a.attempt + 1;
    if (!a.host.empty()) row.host = QString::fromStdString(a.host);
    if (a.outcome == "failed")
      row.state = tr("failed");
    else if (a.outcome == "ended")
      row.state = tr("ended");
    else
      row.state = run.run.status == "running" ? tr("running") : tr("vanished (never said it ended)");
  }
  for (const auto& [rank, late_ns] : run.attendance.late)
    rows[rank].state += QCoreApplication::translate("JobRanks", ", joined %1 s late").arg(late_ns / 1e9, 0, 'f', 1);
  std::vector<JobRankRow> out;
  for (auto& [rank, row] : rows)
    out.push_back(std::move(row));
  return out;
}

}  // namespace ddpscope::gui
