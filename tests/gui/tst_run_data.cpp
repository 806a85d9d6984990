// Loading a run for the app: a loss that turned NaN is kept and named with where it
// started, and what was refused at the run's doors is described.
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

class TestRunData : public ScratchTest {
  Q_OBJECT

 private slots:

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
    const nlohmann::ordered_json events = {{"collector_batches", 0}, {"collector_events", 3}};
    QCOMPARE(describeRejected(events), std::string("Refused from outside the job: 3 events that ended before they "
                                                   "began or overflowed the clock."));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunData)
#include "tst_run_data.moc"
