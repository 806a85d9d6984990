// `ddpscope-cli stats`' JSON of a run: its keys in reading order, per rank and iteration
// the known iteration's figures, the buckets, no GPU part without kernels, and the first
// non-finite loss and gradient from the trainer's marks; the late ranks as `why` counts them.
#include <QtTest/QtTest>

#include "known_runs.h"
#include "run_stats.h"
#include "run_stats_text.h"
#include "scratch_test.h"
#include "slow_cause_run.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

class TestRunStats : public ScratchTest {
  Q_OBJECT

 private slots:
  void testTheKnownIteration() {
    const std::string file = path("known.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      w.write(known_iteration(0));
      w.end_run("finished", "", 0);
    }
    RunStoreReader run(file);
    const auto j = run_stats_json(run);
    std::vector<std::string> keys;
    for (const auto& [k, v] : j.items())
      keys.push_back(k);
    QCOMPARE(keys, (std::vector<std::string>{"run", "ranks", "summary", "cut_short", "stalls", "iterations", "buckets",
                                             "bandwidth", "stragglers", "late", "gpu", "nonfinite", "rejected"}));
    QCOMPARE(j["iterations"].size(), size_t{1});
    QCOMPARE(j["iterations"][0]["exposed_comm_ms"].get<double>(), 60e-6);
    QCOMPARE(j["buckets"].size(), size_t{2});
    QVERIFY(j["gpu"].is_null());
    QVERIFY(j["nonfinite"].is_null());
  }

  // Rank 1's forward 7 ms slower from iteration 14 of 30: "late" lists it in every iteration
  // of that stretch, counts over the whole run's 28 analysed iterations (not the stretch's
  // 16), and names it as the straggler of the stretch, in JSON and words.
  void testTheLateRanksOfASpell() {
    ddpscope::testing::write_slow_run(
        path("spell.ddprun"), {.iterations = 30, .slow_rank = 1, .phase = "forward", .slow_ms = 7, .slow_from = 14});
    RunStoreReader run(path("spell.ddprun"));
    const auto stats = run_stats_json(run);
    const auto& late = stats["late"];
    QCOMPARE(late["iterations"].get<int>(), 28);
    QCOMPARE(late["straggler"].get<int>(), 1);
    QCOMPARE(late["spell"]["first_iteration"].get<int>(), 14);
    QCOMPARE(late["spell"]["last_iteration"].get<int>(), 29);
    QCOMPARE(late["by_iteration"].size(), size_t{16});
    for (const auto& row : late["by_iteration"]) {
      QCOMPARE(row["rank"].get<int>(), 1);
      QVERIFY(row["iteration"].get<int>() >= 14);
      QVERIFY(std::abs(row["lost_ms"].get<double>() - 7) < 1e-6);
    }
    const std::string text = run_stats_text(stats, true);
    QVERIFY2(text.find("  rank 1 in 16 of 28 iterations: rank 1 is the one the job waits for in iterations 14 to 29 "
                       "(ddpscope-cli why says why)\n") != std::string::npos,
             text.c_str());
  }

  void testTheFirstNonFiniteLoss() {
    const std::string file = path("nan.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      EventBatch b = known_iteration(0);
      // The trainer's marks (NonFiniteWatch): the first loss, then the first gradient.
      b.names.push_back("non-finite loss: nan");
      b.names.push_back("non-finite gradient: fc1.weight");
      const auto mark = [](uint32_t name, int64_t t) {
        return BatchEvent{t, t, -1, -1, -1, 2, -1, name, -1, -1, 0, static_cast<uint8_t>(Kind::Mark), 0};
      };
      b.events.push_back(mark(static_cast<uint32_t>(b.names.size() - 2), 950));
      b.events.push_back(mark(static_cast<uint32_t>(b.names.size() - 1), 960));
      w.write(b);
      w.end_run("finished", "", 0);
    }
    RunStoreReader run(file);
    const auto n = first_nonfinite_json(run);
    QVERIFY2(n.is_object() && n["loss"].is_object(), n.dump().c_str());
    QCOMPARE(n["loss"]["iteration"].get<int64_t>(), int64_t{2});
    QCOMPARE(n["loss"]["value"].get<std::string>(), std::string("nan"));
    QCOMPARE(n["gradient"]["parameter"].get<std::string>(), std::string("fc1.weight"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunStats)
#include "tst_run_stats.moc"
