// Run files written by real jobs (ddpscope-cli train, ranks under mpirun, the
// collector): every rank's engine events on one clock-aligned time axis, the bucket
// assignment, graph and metrics; `stats` and `export` read them; a rank killed with
// SIGKILL leaves a sound file with every event it shipped and the run marked failed (a
// killed collector: tst_collector_process).
#include <QtTest/QtTest>

#include "run_files_fixture.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::testing::run_files_fixture;

class TestRunFiles : public RunFilesTest {
  Q_OBJECT

 private slots:

  void testJobRecordsEveryRank_data() {
    QTest::addColumn<int>("ranks");
    QTest::newRow("2 ranks") << 2;
    QTest::newRow("4 ranks") << 4;
  }

  void testJobRecordsEveryRank() {
    QFETCH(int, ranks);
    const std::string path = file(QString("job%1.ddprun").arg(ranks));
    const int iters = 12;
    Result r = run({"train", "--np", QString::number(ranks), "--iters", QString::number(iters), "--width", "512",
                    "--depth", "4", "--bucket-cap-mb", "0.01", "--out", QString::fromStdString(path)});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(QString("run file: %1").arg(path.c_str())), qPrintable(r.out));

    RunStoreReader store(path);
    QCOMPARE(store.integrity_check(), std::string("ok"));
    const RunRow info = store.run();
    QCOMPARE(info.status, std::string("finished"));
    QCOMPARE(info.world_size, ranks);
    QCOMPARE(info.backend, std::string("mpi"));
    check_nothing_pending(store, ranks, iters);
    if (QTest::currentTestFailed()) return;
    const auto rank_rows = store.ranks();
    QCOMPARE(int(rank_rows.size()), ranks);
    std::set<int64_t> pids;
    for (const RankRow& k : rank_rows) {
      check_rank_records(store, k, iters);
      if (QTest::currentTestFailed()) return;
      pids.insert(k.pid);
    }
    QCOMPARE(int(pids.size()), ranks);  // really separate processes
    // Threads are named: the training thread and the group's communication lanes.
    bool compute = false, comm = false;
    for (const ThreadRow& t : store.threads()) {
      compute |= t.name == "compute";
      comm |= t.name.rfind("comm:", 0) == 0;
    }
    QVERIFY(compute && comm);

    // The aligned axis: each iteration's spans on different ranks overlap in time (the
    // allreduces tie them together), which they would not with misaligned clocks.
    const auto it0 = store.spans({.kinds = {Kind::Iteration}, .rank = 0, .iteration = 5});
    const auto it1 = store.spans({.kinds = {Kind::Iteration}, .rank = ranks - 1, .iteration = 5});
    QVERIFY(it0.size() == 1 && it1.size() == 1);
    QVERIFY(it0[0].t_begin_ns < it1[0].t_end_ns && it1[0].t_begin_ns < it0[0].t_end_ns);

    check_stats(path, ranks, iters);
    if (QTest::currentTestFailed()) return;
    check_chrome_export(path, ranks);
  }

  void testSkewedRankClockIsRecovered() {
    // Rank 1's clock runs 5 s ahead; the collector's measurement must find that and put
    // its events back on the shared axis.
    const std::string path = file("skew.ddprun");
    const int64_t skew = 5'000'000'000;
    Result r = run({"train", "--np", "2", "--iters", "10", "--out", QString::fromStdString(path)},
                   {{"DDPSCOPE_CLOCK_SKEW_NS", QString("1:%1").arg(skew)}});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    RunStoreReader store(path);
    const auto ranks = store.ranks();
    QCOMPARE(ranks.size(), size_t(2));
    QVERIFY2(std::llabs(ranks[0].clock_offset_ns) < 5'000'000, qPrintable(QString::number(ranks[0].clock_offset_ns)));
    QVERIFY2(std::llabs(ranks[1].clock_offset_ns + skew) < 5'000'000,
             qPrintable(QString::number(ranks[1].clock_offset_ns)));
    // Aligned: the same iteration overlaps in time on both ranks.
    for (int64_t it : {2, 6, 10}) {
      const auto a = store.spans({.kinds = {Kind::Iteration}, .rank = 0, .iteration = it});
      const auto b = store.spans({.kinds = {Kind::Iteration}, .rank = 1, .iteration = it});
      QVERIFY(a.size() == 1 && b.size() == 1);
      QVERIFY2(a[0].t_begin_ns < b[0].t_end_ns && b[0].t_begin_ns < a[0].t_end_ns,
               qPrintable(QString("iteration %1: rank 0 [%2, %3], rank 1 [%4, %5]")
                              .arg(it)
                              .arg(a[0].t_begin_ns)
                              .arg(a[0].t_end_ns)
                              .arg(b[0].t_begin_ns)
                              .arg(b[0].t_end_ns)));
    }
  }

  void testOneProcessWritesTheFileDirectly() {
    const std::string path = file("single.ddprun");
    Result r = run({"train", "--iters", "5", "--out", QString::fromStdString(path)});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    RunStoreReader store(path);
    QCOMPARE(store.run().status, std::string("finished"));
    QCOMPARE(int(store.spans({.kinds = {Kind::Iteration}}).size()), 5);
    QCOMPARE(int(store.spans({.kinds = {Kind::Allreduce}}).size()), 0);
  }

  void testDefaultRunFileGoesToTheWorkspace() {
    QTemporaryDir workspace;
    Result r = run({"train", "--np", "2", "--iters", "3"}, {{"DDPSCOPE_WORKSPACE", workspace.path()}});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    const QStringList runs = QDir(workspace.path()).entryList({"*.ddprun"});
    QCOMPARE(runs.size(), 1);
    QVERIFY2(r.out.contains("run file: " + workspace.filePath(runs[0])), qPrintable(r.out));
    Result none =
        run({"train", "--np", "2", "--iters", "3", "--no-probes"}, {{"DDPSCOPE_WORKSPACE", workspace.path()}});
    QVERIFY2(none.code == 0, qPrintable(none.out + none.err));
    QVERIFY(!none.out.contains("run file"));
    QCOMPARE(QDir(workspace.path()).entryList({"*.ddprun"}).size(), 1);
  }

  void testKilledRankKeepsWhatItShipped() {
    const std::string path = file("killed-rank.ddprun");
    Result r = run({"train", "--np", "2", "--iters", "100000", "--out", QString::fromStdString(path)},
                   {{"DDPSCOPE_FAULT", "rank=1,iter=8,kill"}});
    QVERIFY(r.code != 0);
    const QRegularExpression shipped_re("rank 1 shipped ([0-9]+) probe events");
    const auto m = shipped_re.match(r.err);
    QVERIFY2(m.hasMatch(), qPrintable(r.err));
    const int64_t shipped = m.captured(1).toLongLong();
    QVERIFY(shipped > 0);
    RunStoreReader store(path);
    QCOMPARE(store.integrity_check(), std::string("ok"));
    const RunRow info = store.run();
    QCOMPARE(info.status, std::string("failed"));
    QCOMPARE(info.failed_rank, 1);
    QVERIFY(!info.message.empty());
    // Every event rank 1 shipped before it died is in the file, and nothing else of it.
    int64_t rank1 = 0;
    for (const RankRow& k : store.ranks()) {
      if (k.rank == 1) rank1 = k.events_received;
    }
    QCOMPARE(rank1, shipped);
    QCOMPARE(int64_t(store.spans({.rank = 1}).size()), shipped);
    QCOMPARE(int(store.spans({.kinds = {Kind::Iteration}, .rank = 1}).size()), 7);
    // The dead rank is named first, from the flight recorder's records: it never called
    // the collective rank 0 waits in, died by SIGKILL, and what it did last.
    const HangReport report = analyze_hang(store);
    QCOMPARE(report.dead_rank, 1);
    QCOMPARE(report.culprits, std::vector<int>{1});
    const QString verdict = QString::fromStdString(report.verdict);
    QVERIFY2(verdict.startsWith("Group 'world' collective #") &&
                 verdict.contains(": missing ranks. Rank 1 died by signal 9 (Killed) after #") &&
                 verdict.contains("(the likely culprit). Rank 1 never called allreduce f32[") &&
                 verdict.contains("which rank 0 called in backward of iteration 8 (started)") &&
                 verdict.contains("Rank 1 died by signal 9 (Killed)") && verdict.contains("Rank 1 was in iteration 8"),
             report.verdict.c_str());
    for (const std::string& line : report.findings)
      QVERIFY2(line.rfind("rank 1 waits in", 0) != 0, line.c_str());
  }

  // Rank 1 stalls before its backward; rank 0 waits in the bucket's allreduce until the
  // group's timeout ends the job. The run file tells who waited for whom.
  void testStalledRankIsDiagnosed() {
    const std::string path = file("stalled.ddprun");
    Result r = run({"train", "--np", "2", "--iters", "50", "--width", "64", "--depth", "3", "--inject-stall", "1:4:20",
                    "--out", QString::fromStdString(path)},
                   {{"DDPSCOPE_PG_TIMEOUT_MS", "2000"}});
    QVERIFY2(r.code != 0, qPrintable(r.out));
    QVERIFY2(r.err.contains("rank 0: timeout"), qPrintable(r.err));
    RunStoreReader store(path);
    QCOMPARE(store.run().status, std::string("failed"));
    QCOMPARE(store.run().failed_rank, 0);
    const HangReport report = analyze_hang(store);
    QCOMPARE(int(report.ranks.size()), 2);
    const RankHangState& waiting = report.ranks[0];
    const RankHangState& stalled = report.ranks[1];
    QVERIFY(waiting.blocked_in.has_value());
    QCOMPARE(waiting.blocked_in->op, std::string("allreduce"));
    QCOMPARE(waiting.current_iteration, int64_t(4));
    QVERIFY(waiting.missing_grads.empty());
    QCOMPARE(int(waiting.buckets_waiting_for_allreduce.size()), 1);
    QVERIFY(!stalled.blocked_in.has_value());
    QVERIFY(stalled.latest_seq < waiting.blocked_in->seq);
    // The failure as rank 0 typed it (schema 16): the allreduce it waited in, out of time.
    QCOMPARE(store.run().failed.op, std::string("allreduce"));
    QCOMPARE(store.run().failed.seq, waiting.blocked_in->seq);
    QVERIFY(store.run().failed.timed_out);
    QCOMPARE(stalled.current_iteration, int64_t(4));
    QVERIFY(stalled.phase == HangPhase::AfterForward);
    QVERIFY(stalled.params_total == 6);
    QCOMPARE(int64_t(stalled.missing_grads.size()), stalled.params_total);
    QCOMPARE(int(stalled.buckets_waiting_for_grads.size()), 1);
    // The verdict names the culprit first (rank 1 never arrived, and what it did last),
    // then the rank that reported the timeout; the CLI's first line says the same.
    const QString verdict = QString::fromStdString(report.verdict);
    QCOMPARE(report.culprits, std::vector<int>{1});
    QVERIFY2(verdict.startsWith(QStringLiteral("Group 'world' collective #%1: missing ranks. Rank 1 never called "
                                               "allreduce f32[")
                                    .arg(waiting.blocked_in->seq)) &&
                 verdict.contains("which rank 0 called in backward of iteration 4 (started)") &&
                 verdict.contains("Rank 1 was in iteration 4 (after forward), last event ") &&
                 verdict.contains("injected stall") && verdict.contains(". Rank 0 reported it: timeout"),
             qPrintable(verdict));
    QCOMPARE(report.findings.at(0), report.verdict);
    QVERIFY2(QString::fromStdString(report.findings.at(1))
                 .startsWith(QStringLiteral("rank 0 waits in allreduce #%1").arg(waiting.blocked_in->seq)),
             report.findings.at(1).c_str());
    QVERIFY(QString::fromStdString(report.findings.at(1)).contains("rank 1 has not started it"));
    const Result text = run({"hang", QString::fromStdString(path)});
    QCOMPARE(text.code, 0);
    QCOMPARE(text.out.section('\n', 0, 0), verdict);
    QVERIFY2(text.out.contains("rank 1 is in iteration 4 (after forward)"), qPrintable(text.out));
    // Rank 0's iteration 4 is its 2 s wait, cut short by the timeout: marked so in the run
    // file and left out of the means (averaged in, it named rank 0 the slowest rank).
    const auto cut = store.spans({.kinds = {Kind::Iteration}, .rank = 0, .iteration = 4});
    QCOMPARE(int(cut.size()), 1);
    QVERIFY(cut[0].ended_by_error);
    QVERIFY(cut[0].t_end_ns - cut[0].t_begin_ns >= 1'900'000'000);
    QVERIFY(!store.spans({.kinds = {Kind::Iteration}, .rank = 0, .iteration = 3}).at(0).ended_by_error);
    const Result stats = run({"stats", "--summary", "--json", QString::fromStdString(path)});
    const QJsonObject s = QJsonDocument::fromJson(stats.out.toUtf8()).object();
    const auto cut_json = s["cut_short"].toArray();
    QCOMPARE(cut_json.size(), 1);
    QCOMPARE(cut_json[0].toObject()["rank"].toInt(), 0);
    QCOMPARE(cut_json[0].toObject()["iteration"].toInt(), 4);
    for (const auto& rank : s["summary"].toArray())
      QVERIFY2(rank.toObject()["mean_iteration_ms"].toDouble() < 500, qPrintable(stats.out));
  }

  void testGraphOnRequest() {
    // SIGUSR1 to the launcher: every rank records the graph of its next iteration too.
    const std::string path = file("graph-request.ddprun");
    QProcess job;
    start_job(job, path, 3000, 1000);
    QVERIFY(job.waitForStarted());
    // Wait for the ranks to have pinged the collector and shipped a few iterations.
    int64_t iterations = 0;
    wait_for_run(path, [&](RunStoreReader& store) {
      iterations = int64_t(store.spans({.kinds = {Kind::Iteration}, .rank = 0}).size());
      return iterations >= 20;
    });
    QVERIFY2(iterations >= 20, "the job never got going");
    QCOMPARE(kill(static_cast<pid_t>(job.processId()), SIGUSR1), 0);
    QVERIFY(job.waitForFinished(180000));
    const QString err = QString::fromUtf8(job.readAllStandardError());
    QVERIFY2(job.exitCode() == 0, qPrintable(err));
    QVERIFY2(err.contains("asked every rank for the autograd graph"), qPrintable(err));
    RunStoreReader store(path);
    for (int rank : {0, 1}) {
      QCOMPARE(store.graph(rank).iteration, int64_t(1));  // always the first
      const GraphRows later = store.graph(rank, -1, 2);   // and one after the request
      QVERIFY2(later.iteration > iterations - 1 && !later.nodes.empty(),
               qPrintable(QString("rank %1: next graph at iteration %2").arg(rank).arg(later.iteration)));
    }
  }

  void testStatsRefusesBadFiles() {
    const QString garbage = dir_.filePath("garbage.ddprun");
    QFile f(garbage);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'z'));
    f.close();
    Result r = run({"stats", garbage});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("not a ddpscope run file"), qPrintable(r.err));
    Result missing = run({"stats", dir_.filePath("nothing.ddprun")});
    QVERIFY(missing.code != 0);
    QVERIFY2(missing.err.contains("nothing.ddprun"), qPrintable(missing.err));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunFiles)
#include "tst_run_files.moc"
