// The cause analysis (slow_cause.h) on synthetic runs whose cause is known to the
// microsecond (slow_cause_run.h): one rank slower by 7 ms in one phase, at 2 and 4 ranks, is
// named with its phase (and its layer in backward), the others wait 7 ms for it, and the
// what-if equals the iteration of the same run without the slowdown; a healthy run names no
// one; a stall and a cut-short iteration are named and left out; one rank has no verdict.
#include <QtTest/QtTest>

#include <filesystem>

#include "scratch_test.h"
#include "slow_cause.h"
#include "slow_cause_gpu_run.h"
#include "slow_cause_run.h"
#include "slow_cause_text.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using ddpscope::testing::SlowRunSpec;

class TestSlowCause : public ScratchTest {
  Q_OBJECT

  SlowCause analyse(const SlowRunSpec& spec, const char* name) {
    std::filesystem::remove(path(name));  // the run of the data row before
    testing::write_slow_run(path(name), spec);
    RunStoreReader run(path(name));
    return analyze_slow_cause(run);
  }

 private slots:
  void testTheSlowRankAndPhaseAreNamed_data() {
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("slow");
    QTest::addColumn<QString>("phase");
    QTest::addColumn<int>("layer");
    QTest::addColumn<QString>("where");
    for (int ranks : {2, 4}) {
      const int slow = ranks - 1;
      for (const char* phase : {"outside_step", "forward", "optimizer"})
        QTest::addRow("%d ranks, %s", ranks, phase) << ranks << slow << phase << 0 << "";
      QTest::addRow("%d ranks, backward", ranks) << ranks << 1 << "backward" << 1 << "module.layers.2";
      // The first layer's gradient is backward's last: backward ends when it is ready.
      QTest::addRow("%d ranks, backward's last gradient", ranks) << ranks << 1 << "backward" << 0 << "module.layers.0";
    }
  }
  void testTheSlowRankAndPhaseAreNamed() {
    QFETCH(int, ranks);
    QFETCH(int, slow);
    QFETCH(QString, phase);
    QFETCH(int, layer);
    QFETCH(QString, where);
    const SlowCause healthy = analyse({.ranks = ranks}, "healthy.ddprun");
    const SlowCause c = analyse(
        {.ranks = ranks, .slow_rank = slow, .phase = phase.toStdString(), .layer = layer, .slow_ms = 7}, "slow.ddprun");
    QVERIFY2(c.not_analysed.empty(), c.not_analysed.c_str());
    QCOMPARE(c.iterations, 10);  // 12 but the first and the last
    // 9.5 ms: 1 outside, 3 forward, 4 of gradients, 0.5 of the last allreduce, 1 optimizer.
    QVERIFY(std::abs(healthy.iteration_ms - 9.5) < 1e-6);
    QVERIFY(std::abs(c.iteration_ms - 16.5) < 1e-6);
    const SlowStraggler& s = c.straggler;
    QCOMPARE(s.rank, slow);
    QCOMPARE(QString::fromStdString(s.phase), phase);
    QCOMPARE(QString::fromStdString(s.where), where);
    QVERIFY2(std::abs(s.extra_ms_per_iteration - 7) < 1e-6, qPrintable(QString::number(s.extra_ms_per_iteration)));
    QVERIFY(std::abs(s.lost_ms_per_iteration - 7) < 1e-6);
    QCOMPARE(s.iterations, 10);
    QCOMPARE(QString::fromStdString(s.waited_in), QString("allreduce"));
    // The others wait for it, idle: 7 ms where it is late at the second bucket only (its
    // layer 1 is in that bucket); else 5 ms at the first bucket past their own backward,
    // and 1.5 ms at the second while it computes the gradients they finished under the wait.
    const double waited = phase == "backward" ? 7 : 6.5;
    for (const RankWait& w : c.waits) {
      QVERIFY2(std::abs(w.wait_ms_per_iteration - (w.rank == slow ? 0 : waited)) < 1e-6,
               qPrintable(QString("rank %1 waits %2 ms").arg(w.rank).arg(w.wait_ms_per_iteration)));
      QCOMPARE(w.last_in, w.rank == slow ? 10 : 0);
    }
    // Without the 7 ms, the run is the healthy one.
    QVERIFY2(std::abs(c.what_if_ms - healthy.iteration_ms) < 1e-6, qPrintable(QString::number(c.what_if_ms)));
  }

  void testTheVerdictInWords() {
    const SlowCause two = analyse({.slow_rank = 1, .phase = "outside_step", .slow_ms = 7}, "two.ddprun");
    QCOMPARE(QString::fromStdString(slow_cause_verdict(two)),
             QString("Rank 1 gates 10 of 10 iterations: it spends 8.0 ms per iteration outside the training step "
                     "(outside forward, backward and the optimizer: input loading, logging?), where the other rank "
                     "spends 1.0 ms. Rank 0 waits 6.5 ms per iteration for it in allreduce. Without that, an "
                     "iteration would take about 9.5 ms instead of 16.5 ms."));
    const SlowCause four =
        analyse({.ranks = 4, .slow_rank = 2, .phase = "backward", .layer = 3, .slow_ms = 7}, "four.ddprun");
    QCOMPARE(QString::fromStdString(slow_cause_verdict(four)),
             QString("Rank 2 gates 10 of 10 iterations: it spends 11.0 ms per iteration in backward, most of it "
                     "before the gradient of 'module.layers.6' was ready, where the other ranks spend (median) 4.0 "
                     "ms. Ranks 0, 1 and 3 wait 6.5 ms per iteration for it in allreduce. Without that, an iteration "
                     "would take about 9.5 ms instead of 16.5 ms."));
    const auto json = slow_cause_json(four);
    QCOMPARE(json["straggler"]["rank"].get<int>(), 2);
    QCOMPARE(json["straggler"]["phase"].get<std::string>(), std::string("backward"));
    QCOMPARE(json["straggler"]["where"].get<std::string>(), std::string("module.layers.6"));
    QCOMPARE(json["waits"].size(), size_t{4});
    QVERIFY(std::abs(json["what_if_ms"].get<double>() - 9.5) < 1e-6);
  }

  // Slow in two phases, forward by 6 ms and the optimizer by 2: the verdict names forward, and
  // the what-if takes off forward's 6 ms only, not all 8 the others wait for it.
  void testTheWhatIfTakesOffTheNamedPhaseOnly() {
    const SlowCause c =
        analyse({.slow_rank = 1, .phase = "forward", .slow_ms = 6, .also_phase = "optimizer", .also_ms = 2},
                "two_phases.ddprun");
    QCOMPARE(c.straggler.rank, 1);
    QCOMPARE(QString::fromStdString(c.straggler.phase), QString("forward"));
    QVERIFY2(std::abs(c.straggler.lost_ms_per_iteration - 8) < 1e-6,
             qPrintable(QString::number(c.straggler.lost_ms_per_iteration)));
    QVERIFY2(std::abs(c.what_if_ms - (c.iteration_ms - 6)) < 1e-6,
             qPrintable(QString("%1 of %2").arg(c.what_if_ms).arg(c.iteration_ms)));
  }

  // CPU ranks on one host: the what-if is a floor (without the wait they would compute on its
  // cores at the same time), and the verdict says so; ranks that say no host do not.
  void testTheWhatIfSaysRanksShareCores() {
    const std::string caveat = "(or somewhat more: these ranks share a host's cores";
    const SlowCause shared =
        analyse({.slow_rank = 1, .phase = "forward", .slow_ms = 7, .host = "node-0"}, "shared.ddprun");
    QVERIFY(shared.ranks_share_cores);
    QVERIFY2(slow_cause_verdict(shared).find(caveat) != std::string::npos, slow_cause_verdict(shared).c_str());
    QCOMPARE(slow_cause_json(shared)["ranks_share_cores"].get<bool>(), true);
    const SlowCause apart = analyse({.slow_rank = 1, .phase = "forward", .slow_ms = 7}, "apart.ddprun");
    QVERIFY(!apart.ranks_share_cores);
    QVERIFY(slow_cause_verdict(apart).find(caveat) == std::string::npos);
  }

  // Where the run recorded the ranks' wait for a core, the what-if says how far off that wait
  // may make it (the mean over ranks and iterations), in words and JSON; not below 0.1 ms and
  // 2 % of the what-if, nor where none was recorded (then ranks on one host get the floor).
  void testTheWhatIfGivesOrTakesTheRanksWaitForACore_data() {
    QTest::addColumn<double>("each_ms");
    QTest::addColumn<bool>("said");
    QTest::addRow("1.5 ms a rank") << 1.5 << true;
    QTest::addRow("0.15 ms: under 2 %") << 0.15 << false;
    QTest::addRow("none recorded") << -1.0 << false;
  }
  void testTheWhatIfGivesOrTakesTheRanksWaitForACore() {
    QFETCH(double, each_ms);
    QFETCH(bool, said);
    const SlowCause c = analyse({.slow_rank = 1,
                                 .phase = "forward",
                                 .slow_ms = 7,
                                 .host = "node-0",
                                 .cpu_wait_share = each_ms < 0 ? -1.0 : 0.0,
                                 .cpu_wait_each_ms = std::max(0.0, each_ms)},
                                "give_or_take.ddprun");
    QCOMPARE(c.straggler.rank, 1);
    QVERIFY(std::abs(c.what_if_ms - 9.5) < 1e-6);
    const std::string verdict = slow_cause_verdict(c);
    const auto json = slow_cause_json(c);
    if (said) {
      QVERIFY2(verdict.find("Without that, an iteration would take about 9.5 ms instead of 16.5 ms (give or take "
                            "1.5 ms: in this run its ranks waited that long per iteration for a core, and without "
                            "the slowdown they would wait more or less).") != std::string::npos,
               verdict.c_str());
      QVERIFY2(std::abs(json["what_if_give_or_take_ms"].get<double>() - 1.5) < 1e-3, json.dump().c_str());
    } else {
      QVERIFY2(verdict.find("give or take") == std::string::npos, verdict.c_str());
      QVERIFY2(verdict.find("(or somewhat more: these ranks share a host's cores") != std::string::npos,
               verdict.c_str());
      QVERIFY(json["what_if_give_or_take_ms"].is_null());
    }
  }

  // A rank late because its threads waited for a core (the run records each phase's CPU wait):
  // the verdict says so when the wait explains half its excess or more, and not below that or
  // when the run recorded none.
  void testARankKeptFromItsCoreIsSaidToWaitForACpu_data() {
    QTest::addColumn<QString>("phase");
    QTest::addColumn<double>("share");
    QTest::addColumn<bool>("for_want_of_cpu");
    for (const char* phase : {"outside_step", "backward"}) {
      QTest::addRow("%s, 80 %% waiting", phase) << phase << 0.8 << true;
      QTest::addRow("%s, 50 %% waiting", phase) << phase << 0.5 << true;
      QTest::addRow("%s, 40 %% waiting", phase) << phase << 0.4 << false;
      QTest::addRow("%s, none recorded", phase) << phase << -1.0 << false;
    }
  }
  void testARankKeptFromItsCoreIsSaidToWaitForACpu() {
    QFETCH(QString, phase);
    QFETCH(double, share);
    QFETCH(bool, for_want_of_cpu);
    const SlowCause c =
        analyse({.slow_rank = 1, .phase = phase.toStdString(), .layer = 1, .slow_ms = 7, .cpu_wait_share = share},
                "cpu.ddprun");
    const SlowStraggler& s = c.straggler;
    QCOMPARE(s.rank, 1);
    QCOMPARE(QString::fromStdString(s.phase), phase);
    QCOMPARE(s.for_want_of_cpu(), for_want_of_cpu);
    const std::string verdict = slow_cause_verdict(c);
    const auto json = slow_cause_json(c)["straggler"];
    QCOMPARE(json["for_want_of_cpu"].get<bool>(), for_want_of_cpu);
    if (share < 0) {
      QVERIFY(json["cpu_wait_ms"].is_null() && json["others_cpu_wait_ms"].is_null());
    } else {
      QVERIFY2(std::abs(json["cpu_wait_ms"].get<double>() - 7 * share) < 1e-3, json.dump().c_str());
      QCOMPARE(json["others_cpu_wait_ms"].get<double>(), 0.0);
    }
    const std::string said = QString(
                                 " It is late for want of a CPU: its threads waited for a core %1 ms per iteration "
                                 "there, ready to run while other threads held the host's cores (the other rank's: "
                                 "0.0 ms). Its work is not slower: the host runs more busy threads than it has "
                                 "cores; fewer ranks or threads per host, or nothing else running there, would end "
                                 "the wait. Rank 0")
                                 .arg(7 * share, 0, 'f', 1)
                                 .toStdString();
    QVERIFY2((verdict.find(said) != std::string::npos) == for_want_of_cpu, verdict.c_str());
    QVERIFY2(
        (verdict.find("input loading, logging?") != std::string::npos) == (phase == "outside_step" && !for_want_of_cpu),
        verdict.c_str());
  }

  // Ranks that take turns being last (each phase up to 30 ms longer at random): no rank is
  // named, and why they wait for each other is guessed, or, where the run recorded their
  // threads' wait for a core, said.
  void testRanksTakingTurnsSayTheirCpuWaitWhenRecorded() {
    const SlowCause guessed = analyse({.iterations = 40, .jitter_ns = 30'000'000}, "turns.ddprun");
    QCOMPARE(guessed.straggler.rank, -1);
    const std::string plain = slow_cause_verdict(guessed);
    QVERIFY2(plain.find(", taking turns: their pace varies from iteration to iteration (a shared or busy "
                        "machine?).") != std::string::npos,
             plain.c_str());
    QVERIFY(slow_cause_json(guessed)["cpu_wait_ms"].is_null());
    const SlowCause measured = analyse(
        {.iterations = 40, .jitter_ns = 30'000'000, .cpu_wait_share = 0, .cpu_wait_each_ms = 10}, "turns_cpu.ddprun");
    QCOMPARE(measured.straggler.rank, -1);
    const std::string said = slow_cause_verdict(measured);
    QVERIFY2(
        said.find(", taking turns: their pace varies from iteration to iteration: their threads waited 10.0 ms "
                  "per iteration for a core (the host runs more busy threads than it has cores).") != std::string::npos,
        said.c_str());
    QVERIFY(std::abs(slow_cause_json(measured)["cpu_wait_ms"].get<double>() - 10) < 1e-3);
  }

  void testAHealthyRunNamesNoRank() {
    const SlowCause c = analyse({.ranks = 4}, "healthy.ddprun");
    QCOMPARE(c.straggler.rank, -1);
    QCOMPARE(QString::fromStdString(slow_cause_verdict(c)),
             QString("No rank stands out over 10 iterations: no rank is the one the others wait for in most "
                     "iterations and costs them over 1.0 ms per iteration."));
    QCOMPARE(slow_cause_json(c)["straggler"].is_null(), true);
  }

  // Rank 1's forward 7 ms slower from iteration 14 of 30 (16 of the 28 analysed): no rank
  // gates 2/3 of the run, but rank 1 gates the stretch since, which the verdict is over and
  // says, with the iterations before measured; slow from 10 to 19 only, the stretch ends.
  void testASlowdownThatBeganOrEndedIsNamedWithItsIterations() {
    const SlowCause began =
        analyse({.iterations = 30, .slow_rank = 1, .phase = "forward", .slow_ms = 7, .slow_from = 14}, "began.ddprun");
    QCOMPARE(began.straggler.rank, 1);
    QCOMPARE(QString::fromStdString(began.straggler.phase), QString("forward"));
    QCOMPARE(began.spell.first, int64_t{14});
    QCOMPARE(began.spell.last, int64_t{29});
    QVERIFY(began.spell.to_the_end);
    QCOMPARE(began.spell.run_iterations, 28);
    QCOMPARE(began.iterations, 16);
    QVERIFY(std::abs(began.iteration_ms - 16.5) < 1e-6);
    QVERIFY(std::abs(began.spell.other_iterations_ms - 9.5) < 1e-6);  // measured: the healthy iteration
    QVERIFY(std::abs(began.what_if_ms - 9.5) < 1e-6);
    const std::string said = slow_cause_verdict(began);
    QVERIFY2(said.starts_with("From iteration 14 on (16 of the 28 iterations), rank 1 gates 16 of 16: it spends 10.0 "
                              "ms per iteration in forward, where the other rank spends 3.0 ms.") &&
                 said.ends_with("The iterations before 14 took 9.5 ms."),
             said.c_str());
    QCOMPARE(slow_cause_json(began)["spell"]["first_iteration"].get<int64_t>(), int64_t{14});
    // Rank 1 also 2 ms late once just before (iteration 13): the stretch still starts at 14.
    const SlowCause edged = analyse({.iterations = 30,
                                     .slow_rank = 1,
                                     .phase = "forward",
                                     .slow_ms = 7,
                                     .slow_from = 14,
                                     .stall_rank = 1,
                                     .stall_iteration = 13,
                                     .stall_ms = 2},
                                    "edged.ddprun");
    QCOMPARE(edged.by_iteration[11].iteration, int64_t{13});
    QCOMPARE(edged.by_iteration[11].rank, 1);  // it did gate 13
    QCOMPARE(edged.spell.first, int64_t{14});

    const SlowCause ended = analyse(
        {.iterations = 30, .slow_rank = 1, .phase = "optimizer", .slow_ms = 7, .slow_from = 10, .slow_until = 19},
        "ended.ddprun");
    QCOMPARE(ended.straggler.rank, 1);
    QCOMPARE(QString::fromStdString(ended.straggler.phase), QString("optimizer"));
    // The optimizer of iteration 19 delays iteration 20's first allreduce: the stretch is 11 to 20.
    QCOMPARE(ended.spell.first, int64_t{11});
    QCOMPARE(ended.spell.last, int64_t{20});
    QVERIFY(!ended.spell.to_the_end);
    QVERIFY2(slow_cause_verdict(ended).starts_with("From iteration 11 to 20 (10 of the 28 iterations), rank 1"),
             slow_cause_verdict(ended).c_str());
    QVERIFY(slow_cause_verdict(ended).ends_with("The other iterations took 9.5 ms."));

    // Too short a stretch is not named (3 of 28 iterations): no rank stands out.
    const SlowCause brief =
        analyse({.iterations = 30, .slow_rank = 1, .phase = "forward", .slow_ms = 7, .slow_from = 10, .slow_until = 12},
                "brief.ddprun");
    QCOMPARE(brief.straggler.rank, -1);
    QCOMPARE(brief.spell.first, int64_t{-1});
    // Nor a stretch whose iterations are only 16 % longer (1.5 ms of 9.5): a busy machine's
    // ranks take turns in streaks as long.
    const SlowCause mild = analyse(
        {.iterations = 30, .slow_rank = 1, .phase = "forward", .slow_ms = 1.5, .slow_from = 10, .slow_until = 19},
        "mild.ddprun");
    QCOMPARE(mild.spell.first, int64_t{-1});
    QCOMPARE(mild.straggler.rank, -1);
  }

  // Ranks 1 and 2 of 3 slow alike in forward take turns being last (jitter decides which):
  // each costs the job only the gap to the other, under the noise, while rank 0 waits for
  // both. Before, "the ranks wait for each other, taking turns (a shared or busy machine?)".
  void testTwoRanksSlowAlikeAreNamedTogether() {
    const SlowCause c = analyse({.ranks = 3,
                                 .iterations = 20,
                                 .slow_rank = 1,
                                 .also_slow_rank = 2,
                                 .phase = "forward",
                                 .slow_ms = 7,
                                 .jitter_ns = 1'000'000},
                                "pair.ddprun");
    QCOMPARE(c.straggler.rank, -1);
    QCOMPARE(c.late_group.ranks, (std::vector<int>{1, 2}));
    QCOMPARE(QString::fromStdString(c.late_group.phase), QString("forward"));
    QVERIFY2(c.late_group.phase_ms - c.late_group.others_phase_ms > 6.5,
             qPrintable(QString::number(c.late_group.phase_ms)));
    QVERIFY(c.late_group.others_wait_ms > 6.5);
    const std::string said = slow_cause_verdict(c);
    QVERIFY2(said.starts_with("Ranks 1 and 2 are the ones the others wait for; they take turns being last, so that no "
                              "one of them stands out alone: they spend ") &&
                 said.find(" ms per iteration in forward, where the other rank, 0, spends ") != std::string::npos &&
                 said.find(" Rank 0 waits ") != std::string::npos,
             said.c_str());
    // Without their 7 ms the iteration is about the healthy one.
    QVERIFY2(std::abs(c.what_if_ms - (c.iteration_ms - 7)) < 1.0, qPrintable(QString::number(c.what_if_ms)));
    QCOMPARE(slow_cause_json(c)["late_group"]["ranks"].dump(), std::string("[1,2]"));
    // A healthy run with the same jitter has no group.
    const SlowCause healthy = analyse({.ranks = 3, .iterations = 20, .jitter_ns = 1'000'000}, "jitter.ddprun");
    QVERIFY(healthy.late_group.ranks.empty());
    QVERIFY(slow_cause_json(healthy)["late_group"].is_null());
  }

  void testAStallIsNamedAndLeftOut() {
    const SlowCause c = analyse({.stall_rank = 1, .stall_iteration = 6, .stall_ms = 3000}, "stall.ddprun");
    QCOMPARE(c.stalls.size(), size_t{1});
    const SlowStall& st = c.stalls[0];
    QCOMPARE(st.iteration, int64_t{6});
    QCOMPARE(st.rank, 1);
    QCOMPARE(st.waiting_rank, 0);
    QCOMPARE(QString::fromStdString(st.phase), QString("outside_step"));
    QCOMPARE(QString::fromStdString(st.collective), QString("allreduce #12"));
    QVERIFY(std::abs(st.lost_ms - 3000) < 1e-6);
    QCOMPARE(c.iterations, 9);
    QVERIFY(std::abs(c.iteration_ms - 9.5) < 1e-6);  // the stall is not in the mean
    QCOMPARE(c.straggler.rank, -1);
    QVERIFY(slow_cause_text(c).find("Stall: iteration 6: rank 1 stalled 3.0 s (outside_step); rank 0 waited in "
                                    "allreduce #12. Left out of the means.\n") != std::string::npos);
  }

  void testACutShortIterationIsLeftOut() {
    const SlowCause c = analyse({.slow_rank = 0, .phase = "forward", .slow_ms = 7, .cut_iteration = 4}, "cut.ddprun");
    QCOMPARE(c.cut_short, std::vector<int64_t>{4});
    QCOMPARE(c.iterations, 9);
    QCOMPARE(c.straggler.rank, 0);
    QVERIFY(slow_cause_text(c).find("Iteration 4 was cut short by an error: left out of the means.\n") !=
            std::string::npos);
  }

  // An imported GPU trace (slow_cause_gpu_run.h): the slow kernel's phase is named from the
  // CPU span that launched it, ranks arrive when their NCCL kernels start, and every
  // iteration of a trace counts (none is a warm-up): 4 iterations, 3 stretches between their
  // allreduces.
  void testAGpuTraceNamesTheSlowKernelsPhase_data() {
    QTest::addColumn<QString>("phase");
    for (const char* phase : {"forward", "backward", "optimizer"})
      QTest::newRow(phase) << phase;
  }
  void testAGpuTraceNamesTheSlowKernelsPhase() {
    QFETCH(QString, phase);
    std::filesystem::remove(path("gpu.ddprun"));
    testing::write_slow_gpu_run(
        path("gpu.ddprun"), {.ranks = 2, .iterations = 4, .slow_rank = 1, .phase = phase.toStdString(), .slow_ms = 7});
    RunStoreReader run(path("gpu.ddprun"));
    const SlowCause c = analyze_slow_cause(run);
    QVERIFY2(c.not_analysed.empty(), c.not_analysed.c_str());
    QCOMPARE(c.iterations, 3);
    QVERIFY2(std::abs(c.iteration_ms - 15.5) < 1e-6, qPrintable(QString::number(c.iteration_ms)));  // 8.5 + 7
    QCOMPARE(c.straggler.rank, 1);
    QCOMPARE(QString::fromStdString(c.straggler.phase), phase);
    QVERIFY2(std::abs(c.straggler.extra_ms_per_iteration - 7) < 1e-6,
             qPrintable(QString::number(c.straggler.extra_ms_per_iteration)));
    QVERIFY(std::abs(c.waits[0].wait_ms_per_iteration - 7) < 1e-6);  // inside its NCCL kernel
    QVERIFY(std::abs(c.waits[1].wait_ms_per_iteration) < 1e-6);
    QVERIFY2(std::abs(c.what_if_ms - 8.5) < 1e-6, qPrintable(QString::number(c.what_if_ms)));
  }

  void testOneRankHasNoVerdict() {
    const SlowCause c = analyse({.ranks = 1}, "one.ddprun");
    QCOMPARE(QString::fromStdString(slow_cause_verdict(c)),
             QString("No verdict: the run has one rank: no rank waits for another."));
    // A 2-rank job's file in its first moments, one rank's events in: not "one rank".
    const SlowCause early = analyse({.ranks = 1, .running = true, .world_size = 2}, "early.ddprun");
    QCOMPARE(QString::fromStdString(slow_cause_verdict(early)),
             QString("No verdict: 1 of the run's 2 ranks recorded an iteration (a job just started records them "
                     "within a few iterations)."));
  }

  // Rank 1 slow from iteration 30 of 90: it gates 60 of the 88 analysed, over two thirds, and
  // the verdict keeps the onset (before, past two thirds the whole run's verdict mixed the fast
  // iterations into its waits and its "instead of").
  void testALongRunKeepsTheOnsetOfASlowdown() {
    const SlowCause c =
        analyse({.iterations = 90, .slow_rank = 1, .phase = "forward", .slow_ms = 7, .slow_from = 30}, "long.ddprun");
    QCOMPARE(c.straggler.rank, 1);
    QCOMPARE(c.spell.first, int64_t{30});
    QVERIFY(c.spell.to_the_end);
    QVERIFY(std::abs(c.iteration_ms - 16.5) < 1e-6);
    QVERIFY2(slow_cause_verdict(c).starts_with("From iteration 30 on (60 of the 88 iterations), rank 1 gates 60 of 60"),
             slow_cause_verdict(c).c_str());
    // A tenth of the run at least: 7 slow iterations of 79 are not a stretch, 8 are.
    const SlowCause seven =
        analyse({.iterations = 81, .slow_rank = 1, .phase = "forward", .slow_ms = 7, .slow_from = 26, .slow_until = 32},
                "seven.ddprun");
    QCOMPARE(seven.spell.first, int64_t{-1});
    const SlowCause eight =
        analyse({.iterations = 81, .slow_rank = 1, .phase = "forward", .slow_ms = 7, .slow_from = 26, .slow_until = 33},
                "eight.ddprun");
    QCOMPARE(eight.spell.first, int64_t{26});
    QCOMPARE(eight.straggler.rank, 1);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSlowCause)
#include "tst_slow_cause.moc"
