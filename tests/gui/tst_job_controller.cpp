// Jobs launched from the app and followed (real ddpscope-cli train jobs under mpirun):
// the launch followed live, Stop ending every rank, another run opened meanwhile pausing
// the following, a failed rank named, what the user typed reaching the job as argv and
// never a shell, a bad option refused in the CLI's own words, and every event the CLI writes
// for the app (job_events.h) parsed.
#include <QtTest/QtTest>

#include "live_job_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::live_job_fixture;

class TestJobController : public LiveJobTest {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("DDPSCOPE_CLI", DDPSCOPE_CLI_PATH); }

  void testLaunchFollowsTheJobLive() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    QString error;
    QVERIFY2(window.launchJob(smallJob(5000), &error), qPrintable(error));
    QCOMPARE(currentTab(window), QString("Live"));
    // While it runs: charts and progress on the Live tab; timeline lanes for both ranks
    // and the bucket table when their tabs are shown.
    QTRY_VERIFY_WITH_TIMEOUT(window.currentRun() && window.part<LiveMonitor>()->pointCount("loss") > 0, 60000);
    window.showTab("Timeline");
    QTRY_VERIFY_WITH_TIMEOUT(window.part<TimelinePage>()->view()->data().lanes.size() >= 4, 10000);
    const size_t spans = window.part<TimelinePage>()->view()->data().lanes[0].spans.size();
    QTRY_VERIFY_WITH_TIMEOUT(window.part<TimelinePage>()->view()->data().lanes[0].spans.size() > spans, 10000);
    // Selection, details and a range work on the live run, and survive its growth: a
    // selection still names the same run-file row or is cleared, never another span.
    TimelineView* view = window.part<TimelinePage>()->view();
    view->select({0, 0, SpanRef::In::Spans});
    const int64_t row = view->data().resolve(view->selection())->rowid;
    QVERIFY(row > 0);
    QCOMPARE(window.part<TimelinePage>()->details()->topLevelItem(0)->text(1),
             QString::fromStdString(view->data().nameOf(view->data().resolve(view->selection())->name)));
    view->setRange(view->data().begin_ns, view->data().end_ns);
    QVERIFY(window.part<TimelinePage>()->rangeModel()->rowCount() > 0);
    const size_t grown = view->data().lanes[0].spans.size();
    QTRY_VERIFY_WITH_TIMEOUT(view->data().lanes[0].spans.size() > grown, 10000);
    QVERIFY(!view->selection().valid() || view->data().resolve(view->selection())->rowid == row);
    QVERIFY(window.part<TimelinePage>()->rangeModel()->rowCount() > 0);
    window.showTab("Buckets");
    QTRY_VERIFY_WITH_TIMEOUT(window.part<BucketsPage>()->bucketModel()->rowCount() > 0, 10000);
    window.showTab("Live");
    QVERIFY2(window.part<JobController>()->isActive(), "the job ended before the views filled");
    QCOMPARE(window.currentRun()->run.status, std::string("running"));
    // The running job is in the run list (issue 34: it appeared only once it ended),
    // shown and selected, its status "running".
    QVERIFY(window.runListShown());
    QCOMPARE(window.part<RunListModel>()->rowCount(), 1);
    QCOMPARE(window.part<RunListModel>()->index(0, RunListModel::Status).data().toString(), QString("running"));
    QCOMPARE(window.part<QTableView>("runs")->selectionModel()->selectedRows().size(), 1);
    QVERIFY(window.part<LiveMonitor>()->progressBar()->value() > 0);
    // The views keep following the run (the rate is measured by bench_live_reload).
    const int before = window.part<LiveRunLoader>()->reloads();
    QElapsedTimer timer;
    timer.start();
    QTRY_VERIFY_WITH_TIMEOUT(
        window.part<LiveRunLoader>()->reloads() >= before + 3 || !window.part<JobController>()->isActive(), 30000);
    qInfo("live reloads: %.1f per second",
          (window.part<LiveRunLoader>()->reloads() - before) * 1000.0 / timer.elapsed());
    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Finished, 180000);
    QTRY_COMPARE_WITH_TIMEOUT(window.currentRun()->run.status, std::string("finished"), 10000);
    QCOMPARE(window.part<LiveMonitor>()->progressBar()->value(), 5000);
    QVERIFY(window.part<LiveMonitor>()->statusLabel()->text().startsWith("finished"));
    QVERIFY2(!window.windowTitle().contains("(live)"), qPrintable(window.windowTitle()));  // follows the job
    QCOMPARE(window.part<RunListModel>()->rowCount(), 1);
    // The recorded graph is laid out; a click on the loss node tells how long it ran.
    window.showTab("Graph");
    QVERIFY(window.part<GraphPage>()->view()->shown().nodes.size() >= 8);
    QVERIFY(window.part<GraphPage>()->view()->layoutError().isEmpty());
    QSignalSpy clicked(window.part<GraphPage>()->view(), &GraphView::nodeClicked);
    QTest::qWait(50);
    const QPoint at = window.part<GraphPage>()->view()->mapFromScene(window.part<GraphPage>()->view()->nodeCenter(0));
    QTest::mouseClick(window.part<GraphPage>()->view()->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QCOMPARE(clicked.count(), 1);
    QVERIFY2(
        clicked.at(0).at(0).toString().contains("MseLossBackward") && clicked.at(0).at(0).toString().contains("ran"),
        qPrintable(clicked.at(0).at(0).toString()));
  }

  void testStopEndsTheJob() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QString error;
    QVERIFY2(window.launchJob(smallJob(10000000), &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(window.part<JobController>()->iteration() >= 2, 60000);
    QVERIFY(!window.launchJob(smallJob(10), &error));  // one job at a time
    QVERIFY(error.contains("already running"));
    window.stopJob();
    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Stopped, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(workersRunning(), 0, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(window.currentRun()->run.status, std::string("stopped"), 10000);
  }

  // Opening an earlier run while a job trains shows that run and leaves the job running;
  // Run > Follow job (or opening the job's run file) follows it live again.
  void testAnotherRunPausesFollowingTheJob() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    const QString other = folder.filePath("earlier.ddpscope");
    ddpscope::gui::testing::write_test_run(other.toStdString(), 2, 3);
    auto shown = [&] { return QString::fromStdString(window.currentRun()->path); };
    QString error;
    QVERIFY2(window.launchJob(smallJob(10000000), &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(window.currentRun() && window.part<JobController>()->iteration() >= 2, 60000);
    const QString jobRun = shown();
    QVERIFY(window.isFollowingJob());

    QVERIFY(window.openRun(other));
    QVERIFY(!window.isFollowingJob());
    QVERIFY(!window.part<LiveRunLoader>()->isWatching());
    const int iteration = window.part<JobController>()->iteration();
    QTRY_VERIFY_WITH_TIMEOUT(window.part<JobController>()->iteration() >= iteration + 3, 60000);
    QCOMPARE(shown(), other);  // the job's reloads stay off screen
    QCOMPARE(window.currentRun()->ranks.size(), size_t{2});
    QVERIFY(!window.windowTitle().contains("(live)"));

    window.followJob();
    QVERIFY(window.isFollowingJob());
    QTRY_COMPARE_WITH_TIMEOUT(shown(), jobRun, 10000);
    QVERIFY(window.windowTitle().contains("(live)"));
    const int64_t spans = window.currentRun()->span_count;
    QTRY_VERIFY_WITH_TIMEOUT(window.currentRun()->span_count > spans, 10000);

    window.stopJob();
    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Stopped, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(workersRunning(), 0, 10000);
    QTRY_COMPARE_WITH_TIMEOUT(window.currentRun()->run.status, std::string("stopped"), 10000);
  }

  void testFailedRankIsNamed() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    qputenv("DDPSCOPE_FAULT", "rank=1,iter=3");
    QString error;
    const bool launched = window.launchJob(smallJob(100), &error);
    qunsetenv("DDPSCOPE_FAULT");
    QVERIFY2(launched, qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Failed, 60000);
    QCOMPARE(window.part<JobController>()->failedRank(), 1);
    QVERIFY2(window.part<JobController>()->message().contains("rank 1 failed: injected fault"),
             qPrintable(window.part<JobController>()->message()));
    QCOMPARE(currentTab(window), QString("Hang"));
    QVERIFY(window.part<LiveMonitor>()->statusLabel()->text().contains("rank 1"));
    // The culprit first, with why it failed (the injected fault), in the CLI's words.
    QTRY_VERIFY2_WITH_TIMEOUT(window.part<HangView>()->headline().contains(": missing ranks. Rank 1 never called") &&
                                  window.part<HangView>()->headline().contains("injected fault"),
                              qPrintable(window.part<HangView>()->headline()), 10000);
  }

  // What a user types reaches the job as argv, never through a shell. A
  // hostfile whose name and a --save path whose value hold shell syntax run as they are.
  void testNothingTypedReachesAShell() {
    QTemporaryDir folder;
    const QString dir = folder.path();
    // No '/' may appear inside a file name: a shell would create these in the working folder.
    const QString hostfile = dir + "/hosts; touch PWNED_A $(touch PWNED_B)";
    {
      QFile f(hostfile);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("localhost slots=2\n");
    }
    const QString save = dir + "/model; touch PWNED_C `touch PWNED_D`.bin";
    MainWindow window(dir);
    LaunchConfig c = smallJob(5);
    c.hostfile = hostfile;
    c.extraArguments = "--save '" + save + "'";
    QString error;
    QVERIFY2(window.launchJob(c, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Finished, 60000);
    for (const char* name : {"PWNED_A", "PWNED_B", "PWNED_C", "PWNED_D"})
      QVERIFY2(!QFile::exists(dir + "/" + name) && !QFile::exists(QDir::currentPath() + "/" + name), name);
    QVERIFY2(QFile::exists(save), qPrintable(save));  // the literal name, as typed
  }

  // A launch with a bad option is refused before anything starts, in
  // the CLI's own words (before: the job started and "exited with code 109").
  void testFailedLaunchShowsTheCliMessage() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    LaunchConfig c = smallJob(5);
    c.extraArguments = QStringLiteral("--bogus-flag 3");
    QString error;
    QVERIFY(!window.launchJob(c, &error));
    QVERIFY2(error.contains("The following arguments were not expected") && error.contains("--bogus-flag"),
             qPrintable(error));
    QVERIFY(!window.part<JobController>()->isActive());
    // An option the parser takes but the checks refuse is caught too.
    c.extraArguments = QStringLiteral("--data-path /etc/hostname");
    QVERIFY(!window.launchJob(c, &error));
    QVERIFY2(error.startsWith("--data-path reads a digits file"), qPrintable(error));
    QVERIFY(!window.part<JobController>()->isActive());
  }

  // Every event the CLI writes for the app (job_events.h) reaches the controller's signals,
  // and none is shown as the job's own output; then a real job's lines, each an event.
  void testEveryEventTheCliWritesIsParsed() {
    namespace ev = ddpscope::probes::job_events;
    JobController jobs;
    QSignalSpy started(&jobs, &JobController::started), progress(&jobs, &JobController::progress),
        collecting(&jobs, &JobController::collecting), ranks(&jobs, &JobController::ranksChanged),
        output(&jobs, &JobController::outputLine);
    const std::vector<ev::Event> said = {ev::Start{2, "mpi", "mlp 6x256"},
                                         ev::Progress{3, 10, 0.5, 100.0, -1},
                                         ev::Done{1.5, 10, -1, 100.0, 0.5},
                                         ev::Failed{1, "rank 1 stopped", 1},
                                         ev::Collect{"/tmp/x.ddprun", {"export A=1"}, "A=1"},
                                         ev::Ranks{2, 1}};
    for (const ev::Event& e : said)
      jobs.handleLine(QString::fromStdString(ev::to_line(e)), false);
    QCOMPARE(started.count(), 1);
    QCOMPARE(started.at(0).at(1).toString(), QString("mlp 6x256"));
    QCOMPARE(progress.count(), 1);
    QCOMPARE(progress.at(0).at(0).toInt(), 3);
    QCOMPARE(progress.at(0).at(1).toInt(), 10);
    QCOMPARE(progress.at(0).at(2).toDouble(), 0.5);
    QCOMPARE(collecting.count(), 1);
    QCOMPARE(collecting.at(0).at(0).toStringList(), QStringList{"export A=1"});
    QCOMPARE(ranks.count(), 1);
    QCOMPARE(ranks.at(0).at(0).toInt(), 2);
    QCOMPARE(jobs.failedRank(), 1);
    QCOMPARE(jobs.message(), QString("rank 1 stopped"));
    QCOMPARE(output.count(), 0);
    jobs.handleLine("the job's own words", false);
    QCOMPARE(output.count(), 1);

    QProcess cli;
    cli.start(DDPSCOPE_CLI_PATH, {"train", "--np", "1", "--iters", "3", "--progress", "json", "--no-probes"});
    QVERIFY(cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 0);
    QSet<QString> kinds;
    for (const QString& line : QString::fromUtf8(cli.readAllStandardOutput()).split('\n')) {
      if (!line.startsWith("@ddpscope ")) continue;
      const auto e = ev::parse_line(line.toStdString());
      QVERIFY2(e.has_value(), qPrintable(line));
      kinds << ev::name_of(*e);
    }
    QCOMPARE(kinds, (QSet<QString>{"start", "progress", "done"}));
  }
};

DDPSCOPE_TEST_MAIN(TestJobController)
#include "tst_job_controller.moc"
