// A stall launched from the app (issue 65): a job whose rank 1 stops 30 s in iteration 10,
// started as the Launch dialog starts it (its extra options). While it stalls, the Hang tab
// says rank 0 waits for rank 1 and the wait grows; once it has ended, every page that speaks
// of the run's time names the stall with its iteration, and no mean carries it (the 30 s
// over 29 iterations would be a second each), and the Hang tab still lists the stack rank 1
// took in it. A hung job stopped from the app (issue 66) keeps how long its ranks waited:
// until the stop, not until their last event. A rank stopped by SIGSTOP is said not to
// answer. The Hang tab's button asks a running job's ranks for their stacks.
#include <QtTest/QtTest>

#include <QProcess>
#include <QPushButton>
#include <csignal>
#include <QRegularExpression>
#include <nlohmann/json.hpp>

#include "live_job_fixture.h"
#include "probe.h"
#include "ranks_page.h"
#include "summary_page.h"
#include "test_registry.h"
#include "time_breakdown_page.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::live_job_fixture;

class TestStallFromApp : public LiveJobTest {
  Q_OBJECT

  // The Hang tab's "Its code" cell for `rank` (its latest stack), empty when it has no row.
  static QString codeOfRank(MainWindow& window, int rank) {
    QTableWidget* table = window.part<HangView>()->table();
    for (int r = 0; r < table->rowCount(); ++r)
      if (table->item(r, 0) && table->item(r, 0)->text() == QString::number(rank) && table->item(r, HangView::Code))
        return table->item(r, HangView::Code)->text();
    return {};
  }

  // Every label of the Hang tab, as one text.
  static QString hangText(MainWindow& window) {
    QString text;
    for (QLabel* label : window.part<HangView>()->findChildren<QLabel*>())
      text += label->text() + "\n";
    return text;
  }

 private slots:
  void initTestCase() { qputenv("DDPSCOPE_CLI", DDPSCOPE_CLI_PATH); }

  void testAStallOnEveryPage() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    LaunchConfig job = smallJob(30);
    job.extraArguments = "--inject-stall 1:10:30";
    QString error;
    QVERIFY2(window.launchJob(job, &error), qPrintable(error));

    // During the stall: the Hang tab names rank 1 as the one rank 0 waits for.
    window.showTab("Hang");
    QTRY_VERIFY2_WITH_TIMEOUT(
        hangText(window).contains(QRegularExpression("Rank 1 never called allreduce [^ ]+ #\\d+, which rank 0 called")),
        qPrintable(hangText(window)), 60000);
    QVERIFY2(window.part<JobController>()->isActive(), "the job ended before its stall was seen");

    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Finished, 120000);
    QTRY_COMPARE_WITH_TIMEOUT(window.currentRun()->run.status, std::string("finished"), 10000);
    const QRegularExpression stall(
        "iteration 10: rank 1 stalled (29|30|31)\\.\\d s \\([a-z_]+\\); rank 0 waited in allreduce #");
    const QString summary = window.findChild<SummaryPage*>()->text();
    QVERIFY2(summary.contains(stall) && summary.contains("Stalled: iteration 10, rank 1"), qPrintable(summary));
    window.showTab("Breakdown");
    auto* breakdown = window.part<TimeBreakdownPage>();
    QVERIFY2(breakdown->headline()->text().contains("Stalled: iteration 10, rank 1"),
             qPrintable(breakdown->headline()->text()));
    for (const auto& r : breakdown->bars()->rows())
      QVERIFY2(r.iteration_ms < 100, qPrintable(QString("rank %1: %2 ms").arg(r.rank).arg(r.iteration_ms)));
    window.showTab("Ranks");
    QVERIFY(window.part<RanksPage>()->headline().contains("Stalled: iteration 10, rank 1"));
    window.showTab("Live");
    const QString live = window.part<LiveMonitor>()->verdictLabel()->text();
    QVERIFY2(live.contains("Stalled: iteration 10, rank 1"), qPrintable(live));
    window.showTab("Hang");
    const QString hang = hangText(window);
    QVERIFY2(hang.contains("Nothing is pending now, but the job stalled: ") && hang.contains(stall), qPrintable(hang));
    // The stall stays listed with the stack rank 1 took in it (our engine's native stack).
    const QString code = codeOfRank(window, 1);
    QVERIFY2(code.startsWith("ddpscope::apps::Trainer::inject_stall_if_asked in ddpscope-worker, called from "
                             "ddpscope::apps::Trainer::step in ddpscope-worker") &&
                 code.endsWith(" (earlier)"),
             qPrintable(code));
  }

  // Rank 1 stops for 60 s in iteration 5; the Hang tab shows its stack (taken after 3 s
  // without progress) while the job hangs, and the app's Stop ends the job a second later. The
  // waits are then measured to the stop, in the Hang tab, `hang --json` and the timeline's
  // open allreduce: at least the time the test waited, at most the job's age; the verdict
  // still cites rank 1's code.
  void testAStopInTheStallKeepsItsWaits() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    LaunchConfig job = smallJob(30);
    job.extraArguments = "--inject-stall 1:5:60";
    const int64_t launched_ns = ddpscope::probes::now_ns();
    QString error;
    QVERIFY2(window.launchJob(job, &error), qPrintable(error));
    window.showTab("Hang");
    QTRY_VERIFY2_WITH_TIMEOUT(hangText(window).contains("Rank 1 never called allreduce"), qPrintable(hangText(window)),
                              60000);
    const int64_t seen_ns = ddpscope::probes::now_ns();
    // Rank 1's stack, taken after 3 s without progress, shows while the job still hangs.
    QTRY_VERIFY2_WITH_TIMEOUT(codeOfRank(window, 1).startsWith("ddpscope::apps::Trainer::inject_stall_if_asked"),
                              qPrintable(codeOfRank(window, 1)), 30000);
    QTest::qWait(1000);
    const int64_t stopped_ns = ddpscope::probes::now_ns();
    window.part<JobController>()->stop();
    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Stopped, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(window.currentRun()->run.status, std::string("stopped"), 10000);

    QVERIFY2(hangText(window).contains("Rank 1 is in ddpscope::apps::Trainer::inject_stall_if_asked in "
                                       "ddpscope-worker"),
             qPrintable(hangText(window)));
    const double at_least = (stopped_ns - seen_ns) / 1e9, at_most = (ddpscope::probes::now_ns() - launched_ns) / 1e9;
    auto check = [&](double waited_s, const char* where) {
      QVERIFY2(waited_s >= at_least && waited_s <= at_most,
               qPrintable(QString("%1: waited %2 s; the test waited %3 s before the stop, the job lived %4 s")
                              .arg(where)
                              .arg(waited_s)
                              .arg(at_least)
                              .arg(at_most)));
    };
    const ddpscope::probes::HangReport& report = window.currentRun()->hang;
    QVERIFY(report.ranks.size() == 2 && report.ranks[0].blocked_in);
    const int64_t started_ns = report.ranks[0].blocked_in->started_ns;
    // The Hang tab's table: "allreduce #17 for 4.2 s".
    QTableWidget* table = window.part<HangView>()->table();
    const QRegularExpression wait("allreduce #\\d+ for ([\\d.]+) s");
    QString cells;
    for (int c = 0; c < table->columnCount(); ++c)
      cells += table->item(0, c) ? table->item(0, c)->text() + " | " : QString(" | ");
    const auto m = wait.match(cells);
    QVERIFY2(m.hasMatch(), qPrintable(cells));
    check(m.captured(1).toDouble(), "the Hang tab");
    // The CLI on the same file.
    QProcess cli;
    cli.start(DDPSCOPE_CLI_PATH, {"hang", "--json", window.currentRun()->path.c_str()});
    QVERIFY(cli.waitForFinished(30000));
    const auto json = nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
    check(json["ranks"][0]["blocked_in"]["waited_ms"].get<double>() / 1e3, "hang --json");
    // The timeline draws rank 0's unfinished allreduce up to the stop.
    const TimelineData& timeline = window.currentRun()->timeline;
    int64_t open_end = -1;
    for (const auto& lane : timeline.lanes)
      for (const auto& o : lane.open)
        if (lane.rank == 0 && o.kind == ddpscope::probes::Kind::PgOp) open_end = std::max(open_end, o.end_ns);
    QVERIFY2(open_end > 0, "no open allreduce on rank 0's lanes");
    check((open_end - started_ns) / 1e9, "the timeline's open allreduce");
  }

  // A rank stopped by SIGSTOP runs no code and takes no stack: while the job runs, the Hang
  // tab says it cannot answer, with its pid (its process's state on this host).
  void testAStoppedRankIsSaidNotToAnswer() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    LaunchConfig job = smallJob(100000);
    QString error;
    QVERIFY2(window.launchJob(job, &error), qPrintable(error));
    int64_t pid = -1;
    QTRY_VERIFY_WITH_TIMEOUT(window.currentRun() && !window.currentRun()->analysis.iterations.empty(), 60000);
    for (const auto& r : window.currentRun()->ranks)
      if (r.rank == 1) pid = r.pid;
    QVERIFY(pid > 0);
    ::kill(static_cast<pid_t>(pid), SIGSTOP);
    window.showTab("Hang");
    const QString said = QString("Rank 1 did not answer: its process (pid %1) is stopped by a signal").arg(pid);
    QTRY_VERIFY2_WITH_TIMEOUT(hangText(window).contains(said), qPrintable(hangText(window)), 30000);
    ::kill(static_cast<pid_t>(pid), SIGCONT);
    window.part<JobController>()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!window.part<JobController>()->isActive(), 30000);
  }

  // The Hang tab's button asks a running job's ranks for their stacks (stall captures off:
  // every stack shown answers the ask); each rank's code then shows in the table.
  void testTheHangTabAsksEveryRankForItsStack() {
    qputenv("DDPSCOPE_STACKS_AFTER_S", "0");
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    QString error;
    QVERIFY2(window.launchJob(smallJob(100000), &error), qPrintable(error));
    qunsetenv("DDPSCOPE_STACKS_AFTER_S");
    QTRY_VERIFY_WITH_TIMEOUT(window.currentRun() && !window.currentRun()->analysis.iterations.empty(), 60000);
    window.showTab("Hang");
    QPushButton* ask = window.part<HangView>()->askButton();
    QTRY_VERIFY_WITH_TIMEOUT(ask->isVisible(), 10000);
    ask->click();
    QTRY_VERIFY2_WITH_TIMEOUT(
        codeOfRank(window, 0).contains("ddpscope::apps::") && codeOfRank(window, 1).contains("ddpscope::apps::"),
        qPrintable(codeOfRank(window, 0) + " / " + codeOfRank(window, 1)), 20000);
    QTableWidget* table = window.part<HangView>()->table();
    QVERIFY2(table->item(0, HangView::Code)->toolTip().contains("(asked for by the user)"),
             qPrintable(table->item(0, HangView::Code)->toolTip()));
    window.part<JobController>()->stop();
    QTRY_VERIFY_WITH_TIMEOUT(!window.part<JobController>()->isActive(), 30000);
    QTRY_VERIFY_WITH_TIMEOUT(!ask->isVisible(), 10000);  // once the ended run is loaded again
  }
};

DDPSCOPE_TEST_MAIN(TestStallFromApp)
#include "tst_stall_from_app.moc"
