// Where the time went: forward, backward, exposed communication, optimizer and idle add up
// to the iteration, the straggler is named, and ZeRO's broadcasts after the step count as
// exposed communication.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>
#include <QFile>

#include "bucket_table_model.h"
#include "csv_export.h"
#include "gui_test_runs.h"
#include "overlap_model.h"
#include "run_data.h"
#include "ruler_ticks.h"
#include "time_breakdown.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::probes;

class TestTimeBreakdown : public ScratchTest {
  Q_OBJECT

 private slots:

  // "Where the time went": the parts add up to the iteration; the test run's numbers.
  void testTimeBreakdownAddsUp() {
    const std::string file = path("breakdown.ddprun");
    testing::write_test_run(file, 2, 5, "finished", 100);  // rank 1 starts its allreduces 100 ns late
    const RunData run = loadRun(file);
    const auto rows = breakdown_by_iteration(run.analysis);
    QCOMPARE(rows.size(), size_t(10));
    for (const auto& r : rows) {
      QVERIFY(std::abs(r.forward_ms + r.backward_ms + r.exposed_comm_ms + r.optimizer_ms + r.idle_ms - r.iteration_ms) <
              1e-9);
      QCOMPARE(r.straggler, r.rank == 1);
    }
    // Rank 0: forward 200 ns, backward 600 less finalize 100, exposed 60 (bucket 1 past
    // finalize's start), hidden 250, optimizer 100, idle the other 140.
    const TimeBreakdown& r0 = rows[0];
    QCOMPARE(r0.rank, 0);
    QVERIFY(std::abs(r0.forward_ms - 200e-6) < 1e-12);
    QVERIFY(std::abs(r0.backward_ms - 500e-6) < 1e-12);
    QVERIFY(std::abs(r0.exposed_comm_ms - 60e-6) < 1e-12);
    QVERIFY(std::abs(r0.hidden_comm_ms - 250e-6) < 1e-12);
    QVERIFY(std::abs(r0.optimizer_ms - 100e-6) < 1e-12);
    QVERIFY(std::abs(r0.idle_ms - 140e-6) < 1e-12);
    const auto means = breakdown_by_rank(rows);
    QCOMPARE(means.size(), size_t(2));
    QCOMPARE(means[0].iterations, int64_t(4));  // the first left out
    QCOMPARE(means[1].straggled, int64_t(5));
    QCOMPARE(main_straggler(means), 1);
    QVERIFY(std::abs(means[0].iteration_ms - 1000e-6) < 1e-12);
  }

  // ZeRO's post-step broadcasts (param_sync, [900, 960] of each iteration, after the
  // optimizer) are communication nothing hides: exposed, out of the idle time.
  void testZeroBroadcastIsExposedCommunication() {
    const std::string file = path("zero_breakdown.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      testing::write_iterations(w, 0, 1, 3);
      ddpscope::probes::EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "compute"}};
      b.names = {"zero broadcast"};
      for (int it = 1; it <= 3; ++it) {
        const int64_t o = 1000 * int64_t{it - 1};
        b.events.push_back(ddpscope::probes::BatchEvent{o + 900, o + 960, 4224, -1, -1, it, -1, 0, -1, -1, 0,
                                                        static_cast<uint8_t>(ddpscope::probes::Kind::ParamSync), 0});
      }
      w.write(b);
      w.end_run("finished");
    }
    const RunData run = loadRun(file);
    const auto rows = breakdown_by_iteration(run.analysis);
    QCOMPARE(rows.size(), size_t(3));
    for (const auto& r : rows) {
      QVERIFY(std::abs(r.exposed_comm_ms - 120e-6) < 1e-12);  // 60 of bucket 1, 60 of the broadcasts
      QVERIFY(std::abs(r.idle_ms - 80e-6) < 1e-12);
      QVERIFY(std::abs(r.forward_ms + r.backward_ms + r.exposed_comm_ms + r.optimizer_ms + r.idle_ms - r.iteration_ms) <
              1e-9);
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTimeBreakdown)
#include "tst_time_breakdown.moc"
