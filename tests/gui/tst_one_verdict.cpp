// One verdict for every view (issue 65): on runs whose cause is known to the microsecond
// (slow_cause_run.h: rank 2 of 4 slower by 7 ms in forward), the Summary, the Breakdown (its
// headline, bars and table, for the mean and for one iteration), the Ranks tab and the Overlap
// table name the same rank, and no page calls a waiting rank the slowest; so do they on the
// real runs tests/probes/test_why.py makes (testARealRunOnEveryPage); a 3 s stall is named
// with its iteration on the Summary and left out of the verdict (a real one launched from the
// app: tst_stall_from_app).
#include <QtTest/QtTest>

#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>

#include "hang_view.h"
#include "live_monitor.h"
#include "main_window.h"
#include "overlap_model.h"
#include "rank_overview_view.h"
#include "ranks_page.h"
#include "run_compare.h"
#include "run_data.h"
#include "sort_proxy.h"
#include "slow_cause_run.h"
#include "summary_page.h"
#include "test_registry.h"
#include "time_breakdown_page.h"

using namespace ddpscope::gui;
using ddpscope::testing::SlowRunSpec;

class TestOneVerdict : public QObject {
  Q_OBJECT

  QTemporaryDir m_config, m_folder;

  QString write(const char* name, const SlowRunSpec& spec) {
    const QString file = m_folder.filePath(name);
    ddpscope::testing::write_slow_run(file.toStdString(), spec);
    return file;
  }

 private slots:
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  void testEveryViewNamesTheSameRank() {
    const QString file = write("slow.ddprun", {.ranks = 4, .slow_rank = 2, .phase = "forward", .slow_ms = 7});
    MainWindow window(m_folder.path());
    QVERIFY(window.openRun(file));
    const QString summary = window.findChild<SummaryPage*>()->text();
    QVERIFY2(summary.contains("<b>Why:</b> Rank 2 gates 10 of 10 iterations: it spends 10.0 ms per iteration in "
                              "forward, where the other ranks spend (median) 3.0 ms."),
             qPrintable(summary));

    window.showTab("Breakdown");
    auto* breakdown = window.part<TimeBreakdownPage>();
    QString headline = breakdown->headline()->text();
    QVERIFY2(headline.contains("Rank 2 gates 10 of 10 iterations") &&
                 headline.contains("Rank 2, the one the others wait for, took") && !headline.contains("slowest"),
             qPrintable(headline));
    QCOMPARE(breakdown->bars()->straggler(), 2);
    for (int r = 0; r < breakdown->rankModel()->rowCount(); ++r) {  // the Straggler column: iterations
      const int rank = breakdown->rankModel()->index(r, 0).data().toInt();
      const QString cell =
          breakdown->rankModel()->index(r, breakdown->rankModel()->columnCount() - 1).data().toString();
      QCOMPARE(cell, rank == 2 ? QString("10 iterations") : QString("0 iterations"));
    }
    breakdown->iterationChoice()->setCurrentIndex(breakdown->iterationChoice()->findText("Iteration 5"));
    QCOMPARE(breakdown->bars()->straggler(), 2);
    headline = breakdown->headline()->text();
    QVERIFY2(headline.contains("Straggler: rank 2</b></span> in this iteration") && !headline.contains("slowest"),
             qPrintable(headline));

    window.showTab("Ranks");
    const QString ranks = window.part<RanksPage>()->headline();
    QVERIFY2(ranks.contains("<b>Why:</b> Rank 2 gates 10 of 10 iterations") && !ranks.contains("Slowest"),
             qPrintable(ranks));
    // The map opens coloured by the straggler's phase, its row first (by iteration time the
    // ranks that wait for it look alike); the user's choice stays on a reload of the run.
    RanksPage* ranksPage = window.part<RanksPage>();
    QCOMPARE(ranksPage->metricBox()->currentData().toInt(), static_cast<int>(OverviewMetric::Forward));
    QCOMPARE(ranksPage->view()->overview().rows.at(0).rank, 2);
    QVERIFY2(ranksPage->headline().contains("Highest mean: rank 2"), qPrintable(ranksPage->headline()));
    ranksPage->metricBox()->setCurrentIndex(
        ranksPage->metricBox()->findData(static_cast<int>(OverviewMetric::ExposedWait)));
    ranksPage->setRun(std::make_shared<const RunData>(loadRun(file.toStdString())));
    QCOMPARE(ranksPage->metricBox()->currentData().toInt(), static_cast<int>(OverviewMetric::ExposedWait));

    const RunData run = loadRun(file.toStdString());
    OverlapModel overlap;
    overlap.setRun(&run);
    int marked = 0;
    for (int r = 0; r < overlap.rowCount(); ++r) {
      if (!overlap.index(r, OverlapModel::Straggler).data(OverlapModel::ValueRole).toBool()) continue;
      ++marked;
      QCOMPARE(overlap.index(r, OverlapModel::Rank).data().toInt(), 2);
    }
    QCOMPARE(marked, 10);  // iterations 2 to 11: the first and the last are left out
    // Exposed communication split: the others wait, rank 2 hardly (Overlap, Breakdown, Ranks).
    for (int r = 0; r < overlap.rowCount(); ++r) {
      const int rank = overlap.index(r, OverlapModel::Rank).data().toInt();
      const double wait = overlap.index(r, OverlapModel::ExposedWaitMs).data(OverlapModel::ValueRole).toDouble();
      const int64_t iteration = overlap.index(r, OverlapModel::Iteration).data().toLongLong();
      if (iteration < 2) continue;
      QVERIFY2(rank == 2 ? wait < 0.5 : wait > 5,
               qPrintable(QString("rank %1 iteration %2 waits %3 ms").arg(rank).arg(iteration).arg(wait)));
    }
    window.showTab("Breakdown");
    breakdown->iterationChoice()->setCurrentIndex(0);  // the mean
    const int waitColumn = [&] {
      for (int c = 0; c < breakdown->rankModel()->columnCount(); ++c)
        if (breakdown->rankModel()->horizontalHeaderItem(c)->text().simplified() == "Of exposed: waiting") return c;
      return -1;
    }();
    QVERIFY(waitColumn > 0);
    for (int r = 0; r < breakdown->rankModel()->rowCount(); ++r) {
      const int rank = breakdown->rankModel()->index(r, 0).data().toInt();
      const double wait = breakdown->rankModel()->index(r, waitColumn).data(kSortRole).toDouble();
      QVERIFY2(rank == 2 ? wait < 0.5 : wait > 5, qPrintable(QString("rank %1 waits %2 ms").arg(rank).arg(wait)));
    }
    QVERIFY(window.part<RanksPage>()->metricBox()->findText("waiting for other ranks") >= 0);
  }

  // A real run of the random matrix: tests/probes/test_why.py runs this function on each run
  // it made, once `why` named the rank it slowed (DDPSCOPE_VERDICT_RANK; -1 for a healthy
  // run, which no page may blame). Summary, Breakdown, Ranks, Live and Overlap say the same.
  void testARealRunOnEveryPage() {
    const QString file = qEnvironmentVariable("DDPSCOPE_VERDICT_RUN");
    if (file.isEmpty()) QSKIP("run by tests/probes/test_why.py on the runs it makes");
    bool given = false;
    const int rank = qEnvironmentVariable("DDPSCOPE_VERDICT_RANK").toInt(&given);
    QVERIFY2(given, "DDPSCOPE_VERDICT_RANK: the rank the verdict names, or -1");
    const QString said = rank < 0 ? QString("No rank stands out") : QString("Rank %1 gates").arg(rank);
    MainWindow window(QFileInfo(file).path());
    QVERIFY(window.openRun(file));
    const QString summary = window.findChild<SummaryPage*>()->text();
    QVERIFY2(summary.contains("<b>Why:</b> " + said), qPrintable(summary));
    window.showTab("Breakdown");
    auto* breakdown = window.part<TimeBreakdownPage>();
    const QString headline = breakdown->headline()->text();
    QVERIFY2(headline.contains(said) && !headline.contains("slowest"), qPrintable(headline));
    QCOMPARE(breakdown->bars()->straggler(), rank < 0 ? -1 : rank);
    window.showTab("Ranks");
    const QString ranks = window.part<RanksPage>()->headline();
    QVERIFY2(ranks.contains("<b>Why:</b> " + said) && !ranks.contains("Slowest"), qPrintable(ranks));
    // Coloured by a phase of its own (all but outside the step, which is between iterations),
    // the straggler's row comes first.
    const auto metric = static_cast<OverviewMetric>(window.part<RanksPage>()->metricBox()->currentData().toInt());
    if (rank >= 0 && metric != OverviewMetric::Iteration)
      QCOMPARE(window.part<RanksPage>()->view()->overview().rows.at(0).rank, rank);
    window.showTab("Live");
    const QString live = window.part<LiveMonitor>()->verdictLabel()->text();
    QVERIFY2(live.contains(said), qPrintable(live));
    // The Overlap table marks each iteration's straggler: the rank named, most often.
    const RunData run = loadRun(file.toStdString());
    OverlapModel overlap;
    overlap.setRun(&run);
    std::map<int, int> marks;
    for (int r = 0; r < overlap.rowCount(); ++r)
      if (overlap.index(r, OverlapModel::Straggler).data(OverlapModel::ValueRole).toBool())
        ++marks[overlap.index(r, OverlapModel::Rank).data().toInt()];
    if (rank >= 0) {
      const auto top =
          std::max_element(marks.begin(), marks.end(), [](auto& a, auto& b) { return a.second < b.second; });
      QVERIFY2(top != marks.end() && top->first == rank, qPrintable(QString("%1 ranks marked").arg(marks.size())));
    }
  }

  // Compare: a slow run against a healthy one says that its longer communication is waiting.
  void testCompareSplitsWaitingFromTransfer() {
    const QString healthy = write("a.ddprun", {.ranks = 4});
    const QString slow = write("b.ddprun", {.ranks = 4, .slow_rank = 2, .phase = "forward", .slow_ms = 7});
    ddpscope::probes::RunStoreReader a(healthy.toStdString()), b(slow.toStdString());
    const auto c = ddpscope::probes::compare_runs(a, b);
    QVERIFY2(c.b.exposed_wait_ms > 4 && c.a.exposed_wait_ms < 0.5, c.headline.c_str());
    QVERIFY2(c.headline.find("The largest part of the change: exposed communication +") != std::string::npos &&
                 c.headline.find("(waiting for other ranks +") != std::string::npos,
             c.headline.c_str());
    // `compare` gives each run's verdict after the parts.
    QProcess cli;
    cli.start(DDPSCOPE_CLI_PATH, {"compare", healthy, slow});
    QVERIFY(cli.waitForFinished(60000));
    const QString out = QString::fromUtf8(cli.readAllStandardOutput());
    QVERIFY2(out.contains("\nWhy, A: No rank stands out over 10 iterations") &&
                 out.contains("\nWhy, B: Rank 2 gates 10 of 10 iterations: it spends 10.0 ms per iteration in forward"),
             qPrintable(out));
  }

  // Rank 1's optimizer slow from iteration 9 of 12: the whole run has no straggler yet, the
  // Live tab's "now" (the last 3 analysed, 9 to 11) names it from its two slow steps (the
  // optimizer of iteration 9 delays iteration 10's first allreduce; 11's counts the same way).
  void testLiveSaysWhoIsSlowNow() {
    const QString file =
        write("late.ddprun",
              {.ranks = 2, .slow_rank = 1, .phase = "optimizer", .slow_ms = 7, .slow_from = 9, .running = true});
    const RunData live = loadRun(file.toStdString(), /*now_ns=*/1);
    LiveMonitor monitor;
    monitor.setRun(live, true);
    QString said = monitor.verdictLabel()->text();
    QVERIFY2(said.contains("<b>Now (the last 3 iterations):</b> Rank 1 gates 2 of 3 iterations: in those, it spends "
                           "8.0 ms per iteration in the optimizer step"),
             qPrintable(said));
    monitor.setRun(live, false);  // the job ended: the whole run's verdict
    said = monitor.verdictLabel()->text();
    QVERIFY2(said.contains("<b>Why:</b> No rank stands out over 10 iterations"), qPrintable(said));
    // The last reload of a followed job comes once its run has ended: the whole run's verdict.
    const RunData ended = loadRun(
        write("late_done.ddprun", {.ranks = 2, .slow_rank = 1, .phase = "optimizer", .slow_ms = 7, .slow_from = 9})
            .toStdString());
    monitor.setRun(ended, true);
    said = monitor.verdictLabel()->text();
    QVERIFY2(said.contains("<b>Why:</b> No rank stands out over 10 iterations"), qPrintable(said));
  }

  // A rank slow from iteration 14 of 30 (16 of the 28 analysed): Summary, Breakdown and Ranks
  // give the verdict over the stretch since, and mark that rank, where they said no rank stood out.
  void testASlowdownThatBeganIsNamedByEveryView() {
    const QString file =
        write("began.ddprun", {.iterations = 30, .slow_rank = 1, .phase = "forward", .slow_ms = 7, .slow_from = 14});
    MainWindow window(m_folder.path());
    QVERIFY(window.openRun(file));
    const QString opening = "From iteration 14 on (16 of the 28 iterations), rank 1 gates 16 of 16";
    const QString summary = window.findChild<SummaryPage*>()->text();
    QVERIFY2(summary.contains("<b>Why:</b> " + opening), qPrintable(summary));
    window.showTab("Breakdown");
    auto* breakdown = window.part<TimeBreakdownPage>();
    QVERIFY2(breakdown->headline()->text().contains(opening), qPrintable(breakdown->headline()->text()));
    QCOMPARE(breakdown->bars()->straggler(), 1);
    window.showTab("Ranks");
    QVERIFY2(window.part<RanksPage>()->headline().contains(opening), qPrintable(window.part<RanksPage>()->headline()));
  }

  void testAStallIsNamedAndLeftOut() {
    const QString file = write("stall.ddprun", {.ranks = 2, .stall_rank = 1, .stall_iteration = 6, .stall_ms = 3000});
    MainWindow window(m_folder.path());
    QVERIFY(window.openRun(file));
    const QString summary = window.findChild<SummaryPage*>()->text();
    QVERIFY2(summary.contains("<b>Why:</b> No rank stands out over 9 iterations") &&
                 summary.contains("<b>Stall:</b> iteration 6: rank 1 stalled 3.0 s (outside_step); rank 0 waited in "
                                  "allreduce #12. Left out of the means below."),
             qPrintable(summary));
    // The means leave the stall out: rank 0's mean iteration span is its 8.5 ms (the 1 ms
    // outside the step is between spans), not 300 ms.
    const int row = summary.indexOf("<tr><td>0</td>");
    QVERIFY(row > 0);
    QStringList cells;
    auto it = QRegularExpression("<td>([^<]*)</td>").globalMatch(summary.mid(row, summary.indexOf("</tr>", row) - row));
    while (it.hasNext())
      cells << it.next().captured(1);
    QVERIFY2(cells.size() > 3 && std::abs(cells[3].toDouble() - 8.5) < 0.01, qPrintable(cells.join(" | ")));
    window.showTab("Breakdown");
    auto* breakdown = window.part<TimeBreakdownPage>();
    QVERIFY(breakdown->headline()->text().contains("No rank stands out over 9 iterations"));
    for (const auto& r : breakdown->bars()->rows())
      QVERIFY2(std::abs(r.iteration_ms - 8.5) < 0.01, qPrintable(QString::number(r.iteration_ms)));
    // The Hang tab: nothing pending, but the stall said.
    window.showTab("Hang");
    bool said = false;
    for (QLabel* label : window.part<HangView>()->findChildren<QLabel*>())
      said = said || label->text().contains(
                         "Nothing is pending now, but the job stalled: iteration 6: rank 1 "
                         "stalled 3.0 s (outside_step); rank 0 waited in allreduce #12.");
    QVERIFY(said);
  }
};

DDPSCOPE_TEST_MAIN(TestOneVerdict)
#include "tst_one_verdict.moc"
