// The desktop app's models, fed from run files the test writes through the run store,
// each under QAbstractItemModelTester; and the time <-> pixel mapping of the views.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>
#include <QFile>
#include <QTemporaryDir>

#include "bucket_table_model.h"
#include "gui_test_runs.h"
#include "overlap_model.h"
#include "run_data.h"
#include "run_list_model.h"
#include "time_axis.h"

using namespace ddpscope::gui;

class TestGuiModels : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const char* name) { return dir_.filePath(name).toStdString(); }

 private slots:
  void testRunListShowsEveryRunAndExplainsBadOnes() {
    QTemporaryDir folder;
    testing::write_test_run(folder.filePath("a.ddprun").toStdString(), 2, 3);
    testing::write_test_run(folder.filePath("b.ddprun").toStdString(), 4, 2, "failed");
    QFile garbage(folder.filePath("c.ddprun"));
    QVERIFY(garbage.open(QIODevice::WriteOnly));
    garbage.write(QByteArray(4096, 'x'));
    garbage.close();
    RunListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setFolder(folder.path());
    QCOMPARE(model.rowCount(), 3);
    QMap<QString, int> rowOf;
    for (int r = 0; r < model.rowCount(); ++r)
      rowOf[model.index(r, RunListModel::Name).data().toString()] = r;
    QCOMPARE(model.index(rowOf["a.ddprun"], RunListModel::Status).data().toString(),
             QString("finished"));
    QCOMPARE(model.index(rowOf["a.ddprun"], RunListModel::WorldSize).data().toInt(), 2);
    QCOMPARE(model.index(rowOf["a.ddprun"], RunListModel::Model).data().toString(), QString("mlp"));
    QVERIFY(!model.index(rowOf["a.ddprun"], RunListModel::Started).data().toString().isEmpty());
    QCOMPARE(model.index(rowOf["b.ddprun"], RunListModel::Status).data().toString(),
             QString("failed"));
    QCOMPARE(model.index(rowOf["c.ddprun"], RunListModel::Status).data().toString(),
             QString("unreadable"));
    QVERIFY(model.index(rowOf["c.ddprun"], RunListModel::Name)
                .data(Qt::ToolTipRole)
                .toString()
                .contains("not a ddpscope run file"));
    QCOMPARE(model.index(0, 0).data(RunListModel::PathRole).toString().isEmpty(), false);
    // A new run appears on refresh.
    testing::write_test_run(folder.filePath("d.ddprun").toStdString(), 1, 1);
    model.refresh();
    QCOMPARE(model.rowCount(), 4);
  }

  void testOverlapModelPerRank() {
    const std::string file = path("overlap.ddprun");
    testing::write_test_run(file, 2, 5);
    const RunData run = load_run(file);
    OverlapModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(&run);
    QCOMPARE(model.rowCount(), 10);
    model.setRun(&run, 1);
    QCOMPARE(model.rowCount(), 5);
    QCOMPARE(model.index(0, OverlapModel::Rank).data().toInt(), 1);
    QCOMPARE(model.index(2, OverlapModel::Iteration).data().toInt(), 3);
    QCOMPARE(model.index(0, OverlapModel::CommMs).data(OverlapModel::ValueRole).toDouble(), 310e-6);
    QCOMPARE(model.index(0, OverlapModel::ExposedMs).data(OverlapModel::ValueRole).toDouble(),
             60e-6);
    QVERIFY(
        std::fabs(
            model.index(0, OverlapModel::OverlapRatio).data(OverlapModel::ValueRole).toDouble() -
            (1 - 60.0 / 310.0)) < 1e-9);
    QCOMPARE(model.index(0, OverlapModel::OverlapRatio).data().toString(), QString("0.81"));
    model.setRun(nullptr);
    QCOMPARE(model.rowCount(), 0);
  }

  void testBucketTableOfOneIteration() {
    const std::string file = path("buckets.ddprun");
    testing::write_test_run(file, 2, 4);
    const RunData run = load_run(file);
    BucketTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setRun(&run, 1, 3);
    QCOMPARE(model.rowCount(), 2);
    // Times are ms from the start of the iteration (iteration 3 starts at 2000 ns).
    QCOMPARE(model.index(1, BucketTableModel::Bucket).data().toInt(), 1);
    QCOMPARE(model.index(1, BucketTableModel::Ready).data().toString(), QString("0.001"));
    QCOMPARE(model.index(0, BucketTableModel::Start).data().toString(), QString("0.000"));
    QCOMPARE(model.index(1, BucketTableModel::Parameters).data().toString(), QString("1: b"));
    QCOMPARE(model.index(0, BucketTableModel::Parameters).data().toString(), QString("1: w"));
    QVERIFY(model.index(0, BucketTableModel::Bytes).data().toString().contains("4"));
    model.setRun(&run, 0, 99);  // no such iteration
    QCOMPARE(model.rowCount(), 0);
  }

  void testTimelineLanesAndSpanLookup() {
    const std::string file = path("timeline.ddprun");
    testing::write_test_run(file, 2, 3);
    const RunData run = load_run(file);
    const TimelineData& t = run.timeline;
    QCOMPARE(t.lanes.size(), size_t(4));
    QCOMPARE(t.lanes[0].label, std::string("rank 0 · compute"));
    QCOMPARE(t.lanes[1].label, std::string("rank 0 · comm"));
    QCOMPARE(t.begin_ns, int64_t(0));
    QCOMPARE(t.end_ns, int64_t(3000));
    QCOMPARE(t.iterations.size(), size_t(3));
    QCOMPARE(t.lanes[0].instants.size(), size_t(3));  // bucket-ready ticks
    // Innermost span under a time: finalize inside backward inside the iteration.
    const TimelineSpan* s = t.spanAt(0, 1750);
    QVERIFY(s);
    QCOMPARE(t.names[s->name], std::string("finalize"));
    s = t.spanAt(1, 1400);  // bucket 0's allreduce of iteration 2
    QVERIFY(s);
    QCOMPARE(s->bucket, int64_t(0));
    QCOMPARE(t.spanAt(1, 1600), nullptr);  // between the two allreduces
    QVERIFY(t.spanAt(1, 1600, 60));        // within slack of bucket 1's [1650, 1760]
    // Exposed communication: bucket 1's allreduce past the start of finalize, each
    // iteration, on every lane of the rank.
    QCOMPARE(t.lanes[1].exposed.size(), size_t(3));
    QCOMPARE(t.lanes[1].exposed[0].begin, int64_t(700));
    QCOMPARE(t.lanes[1].exposed[0].end, int64_t(760));
    QCOMPARE(t.lanes[2].exposed[2].begin, int64_t(2700));  // rank 1, iteration 3
  }

  void testTimeAxisMapping() {
    TimeAxis a{100'000, 200'000, 100};  // 1000 ns per pixel
    QCOMPARE(a.ns_per_px(), 1000.0);
    QCOMPARE(a.to_px(150'000), 50.0);
    QCOMPARE(a.to_ns(25), int64_t(125'000));
    a.zoom(2, 25);  // the time under pixel 25 stays there
    QCOMPARE(a.to_ns(25), int64_t(125'000));
    QCOMPARE(a.end_ns - a.begin_ns, int64_t(50'000));
    a.pan(10);  // 500 ns per pixel now
    QCOMPARE(a.to_ns(25), int64_t(130'000));
    a.zoom(1e9, 0);  // never narrower than the minimum span
    QCOMPARE(a.end_ns - a.begin_ns, TimeAxis::kMinSpanNs);
    a.fit(0, 1'000'000, 0.0);
    QCOMPARE(a.begin_ns, int64_t(0));
    QCOMPARE(a.end_ns, int64_t(1'000'000));
    a.zoom(0.5, 50);  // out
    QCOMPARE(a.end_ns - a.begin_ns, int64_t(2'000'000));
  }
};

QTEST_GUILESS_MAIN(TestGuiModels)
#include "tst_gui_models.moc"
