// Comparing two runs (run_compare.h) written with known times: the parts of the
// iteration, ops that appeared, disappeared, got slower or faster or stayed, iteration
// ranges, and clear errors; then `ddpscope-cli compare` on the same files.
#include <QtTest/QtTest>

#include <QProcess>
#include <nlohmann/json.hpp>

#include "run_compare.h"
#include "known_iterations_run.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace {

const OpChange& op(const RunComparison& c, const std::string& name) {
  for (const OpChange& o : c.ops)
    if (o.name == name) return o;
  throw std::runtime_error("no op " + name);
}

}  // namespace

class TestRunCompare : public ScratchTest {
  Q_OBJECT
 private slots:
  void testPartsAndOpsOfKnownRuns() {
    testing::write_known_iterations(path("a.ddprun"), 0.5, false, true);
    testing::write_known_iterations(path("b.ddprun"), 1.0, true, false);
    RunStoreReader a(path("a.ddprun")), b(path("b.ddprun"));
    const RunComparison c = compare_runs(a, b);
    // Iterations 2..4 of 4: the first is the warm-up.
    QCOMPARE(c.a.first_iteration, int64_t{2});
    QCOMPARE(c.a.last_iteration, int64_t{4});
    QCOMPARE(c.a.iterations, int64_t{3});
    QCOMPARE(c.a.ranks, 2);
    QCOMPARE(c.a.first_iteration_begin_ns, int64_t{20'000'000});
    QCOMPARE(c.a.iteration_ms, 10.0);
    QCOMPARE(c.b.iteration_ms, 10.0);
    QCOMPARE(c.a.optimizer_ms, 0.5);
    QCOMPARE(c.b.optimizer_ms, 1.0);
    QCOMPARE(c.a.exposed_comm_ms, 1.0);
    // B's gather runs under backward: hidden communication.
    QCOMPARE(c.b.hidden_comm_ms, 1.0);
    QCOMPARE(c.a.hidden_comm_ms, 0.0);
    QCOMPARE(op(c, "optimizer").change, OpChange::Change::Slower);
    QCOMPARE(op(c, "optimizer").delta_ms(), 0.5);
    QCOMPARE(op(c, "gather").change, OpChange::Change::Appeared);
    QCOMPARE(op(c, "gather").b_count, 1.0);
    QCOMPARE(op(c, "data_wait").change, OpChange::Change::Disappeared);
    QCOMPARE(op(c, "data_wait").a_ms, 0.5);
    QCOMPARE(op(c, "forward").change, OpChange::Change::Same);
    QCOMPARE(op(c, "backward").change, OpChange::Change::Same);
    // Largest change first: gather (+1 ms), then the two of 0.5 ms.
    QCOMPARE(c.ops.front().name, std::string("gather"));
    QVERIFY2(c.headline.find("+0.00 ms") != std::string::npos, c.headline.c_str());
    // The other way round, the changes turn round too.
    const RunComparison back = compare_runs(b, a);
    QCOMPARE(op(back, "optimizer").change, OpChange::Change::Faster);
    QCOMPARE(op(back, "gather").change, OpChange::Change::Disappeared);
  }

  void testIterationRangesAndErrors() {
    testing::write_known_iterations(path("r.ddprun"), 0.5, false, false, 6);
    RunStoreReader r(path("r.ddprun"));
    const RunComparison c = compare_runs(r, r, {.first = 1, .last = 2}, {.first = 5, .last = -1});
    QCOMPARE(c.a.first_iteration, int64_t{1});
    QCOMPARE(c.a.iterations, int64_t{2});
    QCOMPARE(c.b.first_iteration, int64_t{5});
    QCOMPARE(c.b.last_iteration, int64_t{6});
    QCOMPARE(c.b.first_iteration_begin_ns, int64_t{50'000'000});
    QCOMPARE(op(c, "optimizer").change, OpChange::Change::Same);
    try {
      compare_runs(r, r, {.first = 40, .last = 50});
      QFAIL("a range with no iteration was accepted");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("no finished iteration in 40..50; it holds iterations 1..6"), e.what());
    }
    {
      RunStoreWriter empty(path("empty.ddprun"));
      empty.begin_run({});
    }
    RunStoreReader empty(path("empty.ddprun"));
    try {
      compare_runs(r, empty);
      QFAIL("a run without iterations was accepted");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("run B") && QString(e.what()).contains("has no finished iteration"),
               e.what());
    }
  }

  void testCliCompare() {
    testing::write_known_iterations(path("ca.ddprun"), 0.5, false, true);
    testing::write_known_iterations(path("cb.ddprun"), 1.0, true, false);
    QProcess cli;
    cli.start(DDPSCOPE_CLI_PATH, {"compare", QString::fromStdString(path("ca.ddprun")),
                                  QString::fromStdString(path("cb.ddprun")), "--json"});
    QVERIFY(cli.waitForFinished(30000));
    QCOMPARE(cli.exitCode(), 0);
    const auto j = nlohmann::json::parse(cli.readAllStandardOutput().toStdString());
    QCOMPARE(j["a"]["iterations"][0].get<int>(), 2);
    QCOMPARE(j["ops"][0]["name"].get<std::string>(), std::string("gather"));
    QCOMPARE(j["ops"][0]["change"].get<std::string>(), std::string("appeared"));
    const auto optimizer = std::find_if(j["parts_ms"].begin(), j["parts_ms"].end(),
                                        [](const auto& p) { return p["part"] == "optimizer"; });
    QVERIFY(optimizer != j["parts_ms"].end());
    QCOMPARE((*optimizer)["delta_ms"].get<double>(), 0.5);
    cli.start(DDPSCOPE_CLI_PATH, {"compare", QString::fromStdString(path("ca.ddprun")),
                                  QString::fromStdString(path("cb.ddprun")), "--iterations", "3:x"});
    QVERIFY(cli.waitForFinished(30000));
    QCOMPARE(cli.exitCode(), 2);
    QVERIFY2(cli.readAllStandardError().contains("give FIRST:LAST iteration numbers"), "bad range not explained");
    cli.start(DDPSCOPE_CLI_PATH,
              {"compare", QString::fromStdString(path("ca.ddprun")), QString::fromStdString(path("cb.ddprun"))});
    QVERIFY(cli.waitForFinished(30000));
    const QString text = cli.readAllStandardOutput();
    QVERIFY2(text.contains("appeared") && text.contains("disappeared") && text.contains("slower"), qPrintable(text));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunCompare)
#include "tst_run_compare.moc"
