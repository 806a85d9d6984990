// A run read while its job writes it: the distributed views of a --remote-embedding job
// opened mid-run (its messages, passes and a replay), and a rank that stops growing the
// run opening the hang view.
#include <QtTest/QtTest>

#include "live_job_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::live_job_fixture;

class TestLiveRunLoader : public LiveJobTest {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("DDPSCOPE_CLI", DDPSCOPE_CLI_PATH); }

  // The distributed views read a run file while its job still writes it: a
  // --remote-embedding job (RPC and distributed autograd under DDP) opened mid-run shows
  // its messages, its recorded passes, and replays one.
  void testDistributedViewsOpenARunStillBeingWritten() {
    QTemporaryDir folder;
    const QString file = folder.filePath("remote.ddprun");
    QProcess job;
    job.start(DDPSCOPE_CLI_PATH, {"train",     "--np",   "3",       "--model", "transformer", "--remote-embedding",
                                  "--iters",   "100000", "--width", "32",      "--depth",     "1",
                                  "--context", "16",     "--batch", "8",       "--progress",  "lines",
                                  "--out",     file});
    QVERIFY(job.waitForStarted());
    // Until the trainers' first passes are in the file.
    QElapsedTimer waited;
    waited.start();
    bool ready = false;
    while (!ready && waited.elapsed() < 60000) {
      QTest::qWait(500);
      try {
        ddpscope::probes::RunStoreReader reader(file.toStdString());
        ready = !listDistGraphs(reader).empty() && reader.messages().size() > 20;
      } catch (const std::exception&) {
      }
    }
    QVERIFY2(ready, "the job recorded no distributed pass within 60 s");
    MainWindow window(folder.path());
    QVERIFY(window.openRun(file));
    QCOMPARE(QString::fromStdString(window.currentRun()->run.status), QString("running"));
    window.showTab("Messages");
    QVERIFY(window.part<MessagesPage>()->view()->data().arrows.size() > 20);
    window.showTab("Graph");
    QVERIFY(window.part<GraphPage>()->choice()->count() >= 1);
    QVERIFY(window.part<GraphPage>()
                ->choice()
                ->itemText(window.part<GraphPage>()->choice()->count() - 1)
                .contains("context"));
    QString error;
    QVERIFY2(window.part<LearnPage>()->openRun(file, &error), qPrintable(error));
    QVERIFY(!window.part<LearnPage>()->lesson().steps.empty());
    job.terminate();  // SIGTERM: the CLI stops every rank
    QVERIFY(job.waitForFinished(30000));
    QTRY_COMPARE_WITH_TIMEOUT(workersRunning(), 0, 10000);
  }

  void testStalledRankOpensTheHangView() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.setStallTimeoutMs(1500);
    LaunchConfig c = smallJob(50);
    c.extraArguments = "--inject-stall 1:4:300";
    QString error;
    QVERIFY2(window.launchJob(c, &error), qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(currentTab(window), QString("Hang"), 60000);
    QVERIFY2(window.part<HangView>()->headline().contains("No progress"),
             qPrintable(window.part<HangView>()->headline()));
    // The analysis arrives with the next reload.
    QTRY_VERIFY_WITH_TIMEOUT(window.part<HangView>()->findings().contains("rank 0 waits in allreduce"), 5000);
    QVERIFY2(window.part<HangView>()->findings().contains("rank 1 has not started it"),
             qPrintable(window.part<HangView>()->findings()));
    QCOMPARE(window.part<HangView>()->table()->rowCount(), 2);
    // While nothing is written the file is not read again.
    const int reloads = window.part<LiveRunLoader>()->reloads();
    QTest::qWait(1500);
    QVERIFY2(window.part<LiveRunLoader>()->reloads() <= reloads + 1,
             qPrintable(QString("%1 -> %2").arg(reloads).arg(window.part<LiveRunLoader>()->reloads())));
    QVERIFY(window.part<HangView>()->table()->item(0, HangView::BlockedIn)->text().startsWith("allreduce #"));
    QCOMPARE(window.part<HangView>()->table()->item(1, 2)->text(), QString("after forward"));
    // Bucket columns count, as the CLI does, then name the buckets (a bare id read as a count).
    QCOMPARE(window.part<HangView>()->table()->item(1, HangView::WaitingForGradients)->text(),
             QString("1 (bucket 0)"));  // no gradients yet
    QCOMPARE(window.part<HangView>()->table()->item(0, HangView::WaitingForGradients)->text(), QString("0"));
    QCOMPARE(window.part<HangView>()->table()->item(0, HangView::WaitingForAllreduce)->text(),
             QString("1 (bucket 0)"));  // in its allreduce
    // The culprit, live too. Under load a batch shipped before the stall can arrive after
    // it (the view then says "making progress" until the next 1.5 s without events): wait
    // for the job to be seen stalled again rather than read one moment.
    QTRY_VERIFY2_WITH_TIMEOUT(
        window.part<HangView>()->headline().contains("missing ranks. Rank 1 never called allreduce"),
        qPrintable(window.part<HangView>()->headline()), 15000);
    window.stopJob();
    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Stopped, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(workersRunning(), 0, 10000);
  }
};

DDPSCOPE_TEST_MAIN(TestLiveRunLoader)
#include "tst_live_run_loader.moc"
