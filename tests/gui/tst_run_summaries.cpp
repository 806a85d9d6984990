// What the Summary, Breakdown and Overlap pages show of a run: overlap per rank and
// iteration, the time breakdown adding up, a non-finite loss kept and named, tables as
// CSV, and what was refused at the run's doors.
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

using namespace ddpscope::gui;
using namespace ddpscope::probes;

class TestRunSummaries : public ScratchTest {
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

  // A loss that turned NaN is stored (SQLite would turn a NaN REAL into NULL), read back
  // as NaN, and the run says where it started and which gradient was first.
  void testNonFiniteLossIsKeptAndNamed() {
    const std::string file = path("nan.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      testing::write_iterations(w, 0, 1, 3);
      testing::write_iterations(w, 1, 1, 3);
      using ddpscope::probes::Kind;
      for (int rank : {0, 1}) {
        ddpscope::probes::EventBatch b;
        b.rank = rank;
        b.threads = {{0, 100, "compute"}};
        b.names = {"non-finite loss: nan", "non-finite gradient: layers.0.weight"};
        // Rank 1 sees it first (earlier on the common clock).
        const int64_t t = rank == 1 ? 2100 : 2300;
        b.events.push_back({t, t, -1, -1, -1, 3, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Mark), 0});
        b.events.push_back({t - 50, t - 50, -1, -1, -1, 3, 0, 1, -1, -1, 0, static_cast<uint8_t>(Kind::Mark), 0});
        for (int it = 1; it <= 3; ++it) {
          const std::string value = it < 3 ? "0.5" : R"("nan")";
          b.records.push_back(R"({"type":"metric","name":"loss","iteration":)" + std::to_string(it) + R"(,"value":)" +
                              value + "}");
        }
        b.records.push_back(R"({"type":"metric","name":"loss","iteration":4,"value":"inf"})");
        w.write(b);
      }
      w.end_run("finished");
    }
    const RunData d = loadRun(file);
    std::vector<double> rank0;
    for (const auto& m : d.metrics)
      if (m.name == "loss" && m.rank == 0) rank0.push_back(m.value);
    QCOMPARE(rank0.size(), size_t{4});  // nothing skipped
    QCOMPARE(rank0[1], 0.5);
    QVERIFY(std::isnan(rank0[2]));
    QVERIFY(std::isinf(rank0[3]) && rank0[3] > 0);
    QCOMPARE(d.nonfinite_loss_iteration, int64_t{3});
    QCOMPARE(QString::fromStdString(d.nonfinite),
             QString("The loss became nan in iteration 3 (first on rank 1). The first gradient that was "
                     "not finite: layers.0.weight on rank 1 in iteration 3."));
  }

  void testCsvOfATable() {
    const std::string file = path("csv.ddprun");
    testing::write_test_run(file, 1, 2);
    const RunData run = loadRun(file);
    BucketTableModel model;
    model.setRun(&run, 0, 1);
    const QStringList lines = toCsv(model).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);  // header + 2 buckets
    QVERIFY(lines[0].startsWith("Bucket,Ready order,Bytes"));
    QVERIFY2(lines[2].endsWith(",1: b"), qPrintable(lines[2]));
    QString error;
    const QString out = scratch_file("buckets.csv");
    QVERIFY(writeCsv(model, out, &error));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(f.readAll()), toCsv(model));
    QVERIFY(!writeCsv(model, "/nonexistent/dir/x.csv", &error));
    QVERIFY2(error.contains("/nonexistent/dir/x.csv"), qPrintable(error));
  }

  // The summary's line about what was refused at the run's doors.
  void testRejectedMessagesAreDescribed() {
    QCOMPARE(describeRejected({{"collector_batches", 0},
                               {"rpc_without_token", 0},
                               {"rpc_malformed", 0},
                               {"by_rank", nlohmann::ordered_json::array()}}),
             std::string());
    const nlohmann::ordered_json r = {{"collector_batches", 2},
                                      {"rpc_without_token", 15},
                                      {"rpc_malformed", 1},
                                      {"by_rank",
                                       {{{"rank", 1}, {"rpc_without_token", 15}, {"rpc_malformed", 0}},
                                        {{"rank", 2}, {"rpc_without_token", 0}, {"rpc_malformed", 1}}}}};
    QCOMPARE(describeRejected(r), std::string("Refused from outside the job: 2 batches at the collector; 15 RPC "
                                              "messages without the job's token and 1 malformed (rank 1: 15, "
                                              "rank 2: 1)."));
  }
};

QTEST_GUILESS_MAIN(TestRunSummaries)
#include "tst_run_summaries.moc"
