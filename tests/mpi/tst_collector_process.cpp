// The job's ddpscope-collector killed while the ranks train: training goes on, and the
// run file says the collector died and what was lost.
#include <QtTest/QtTest>

#include "run_files_fixture.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::testing::run_files_fixture;

class TestCollectorProcess : public RunFilesTest {
  Q_OBJECT

 private slots:

  void testKilledCollectorDoesNotStopTraining() {
    const std::string path = file("killed-collector.ddprun");
    QProcess job;
    start_job(job, path, 2500, 500);
    // Wait until events arrive, then kill the collector mid-run.
    pid_t collector = 0;
    int64_t spans_before = 0;
    wait_for_run(path, [&](RunStoreReader& store) {
      if (!collector) collector = collector_of(path);
      spans_before = store.span_count();
      return collector > 0 && spans_before > 0;
    });
    QVERIFY2(collector > 0 && spans_before > 0, "the job never started recording");
    QCOMPARE(kill(collector, SIGKILL), 0);
    QVERIFY(job.waitForFinished(180000));
    const QString out = QString::fromUtf8(job.readAllStandardOutput());
    const QString err = QString::fromUtf8(job.readAllStandardError());
    QVERIFY2(job.exitCode() == 0, qPrintable(out + err));  // training went on
    QVERIFY2(out.contains("done: 2500 iterations"), qPrintable(out));
    QVERIFY2(err.contains("collector killed by signal 9"), qPrintable(err));
    RunStoreReader store(path);
    QCOMPARE(store.integrity_check(), std::string("ok"));
    const RunRow info = store.run();
    QCOMPARE(info.status, std::string("incomplete"));
    QVERIFY2(info.message.find("collector") != std::string::npos, info.message.c_str());
    int64_t dropped = 0;
    for (const RankRow& k : store.ranks())
      dropped += k.events_dropped;
    QVERIFY2(dropped > 0, "the events lost with the collector were not counted");
    QVERIFY(store.span_count() >= spans_before);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCollectorProcess)
#include "tst_collector_process.moc"
