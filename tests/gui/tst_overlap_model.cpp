// The overlap table: each rank's hidden and exposed communication per iteration.
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

class TestOverlapModel : public ScratchTest {
  Q_OBJECT

 private slots:

  void testOverlapModelPerRank() {
    const std::string file = path("overlap.ddprun");
    testing::write_test_run(file, 2, 5);
    const RunData run = loadRun(file);
    OverlapModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(&run);
    QCOMPARE(model.rowCount(), 10);
    model.setRun(&run, 1);
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(model.index(0, OverlapModel::Rank).data().toInt(), 1);
    QCOMPARE(model.index(2, OverlapModel::Iteration).data().toInt(), 3);
    QCOMPARE(model.index(0, OverlapModel::CommMs).data(OverlapModel::ValueRole).toDouble(), 310e-6);
    QCOMPARE(model.index(0, OverlapModel::ExposedMs).data(OverlapModel::ValueRole).toDouble(), 60e-6);
    QVERIFY(std::fabs(model.index(0, OverlapModel::OverlapRatio).data(OverlapModel::ValueRole).toDouble() -
                      (1 - 60.0 / 310.0)) < 1e-9);
    QCOMPARE(model.index(0, OverlapModel::OverlapRatio).data().toString(), QString("0.81"));
    model.setRun(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  // Each row's bus bandwidth: its bucket allreduces of 64 KiB or more, bytes over the time
  // from each bucket's last arrival to this rank's end (2 ranks: the factor 2(n-1)/n is 1).
  void testBusBandwidthPerRankAndIteration() {
    const std::string file = path("bus.ddprun");
    testing::write_test_run(file, 2, 4);
    RunData run = loadRun(file);
    OverlapModel model;
    model.setRun(&run, 1);
    QCOMPARE(model.index(1, OverlapModel::BusGbps).data().toString(), QString("–"));  // buckets under 64 KiB
    for (auto& b : run.analysis.buckets)
      b.bytes = int64_t{1} << 20;
    model.setRun(&run, 1);
    double bytes = 0, ns = 0;
    for (const auto& b : run.analysis.buckets) {
      if (b.rank != 1 || b.iteration != 2) continue;
      int64_t last = 0;
      for (const auto& o : run.analysis.buckets)
        if (o.iteration == b.iteration && o.bucket == b.bucket) last = std::max(last, o.start_ns);
      bytes += static_cast<double>(b.bytes);
      ns += static_cast<double>(b.end_ns - last);
    }
    QVERIFY(ns > 0);
    QCOMPARE(model.index(1, OverlapModel::Iteration).data().toInt(), 2);
    QVERIFY(std::fabs(model.index(1, OverlapModel::BusGbps).data(OverlapModel::ValueRole).toDouble() - bytes / ns) <
            1e-9 * bytes / ns);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestOverlapModel)
#include "tst_overlap_model.moc"
