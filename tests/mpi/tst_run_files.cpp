// Run files written by real jobs (ddpscope-cli train, ranks under mpirun, the
// collector): every rank's engine events on one clock-aligned time axis, the bucket
// assignment, graph and metrics; `stats` and `export` read them; a rank killed with
// SIGKILL leaves a sound file with every event it shipped and the run marked failed; a
// killed collector does not stop training and its loss is counted.
#include <signal.h>

#include <QtTest/QtTest>

#include <QDir>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <cmath>
#include <set>

#include "hang_analysis.h"
#include "run_store_reader.h"

using namespace ddpscope::probes;

class TestRunFiles : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  struct Result {
    int code;
    QString out, err;
  };
  static QProcessEnvironment environment(const QMap<QString, QString>& extra) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (auto it = extra.begin(); it != extra.end(); ++it)
      env.insert(it.key(), it.value());
    return env;
  }
  Result run(const QStringList& args, const QMap<QString, QString>& extra_env = {}) {
    QProcess p;
    p.setProcessEnvironment(environment(extra_env));
    p.start(DDPSCOPE_CLI_PATH, args);
    if (!p.waitForFinished(180000)) {
      p.kill();
      p.waitForFinished();
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
  }
  std::string file(const QString& name) { return dir_.filePath(name).toStdString(); }

  // Starts a 2-rank job of a tiny MLP, long enough to act on while it runs.
  static void start_job(QProcess& job, const std::string& path, int iters, int log_every) {
    job.setProcessEnvironment(environment({}));
    job.start(DDPSCOPE_CLI_PATH,
              {"train", "--np", "2", "--iters", QString::number(iters), "--width", "32", "--batch", "8", "--log-every",
               QString::number(log_every), "--out", QString::fromStdString(path)});
  }

  // Polls the growing run file until `ready(reader)` holds (up to 60 s).
  template <typename Ready>
  static bool wait_for_run(const std::string& path, Ready ready) {
    QElapsedTimer timer;
    timer.start();
    while (timer.elapsed() < 60000) {
      QThread::msleep(50);
      try {
        RunStoreReader store(path);
        if (ready(store)) return true;
      } catch (const RunStoreError&) {
        // not created yet
      }
    }
    return false;
  }

  // The pid of the collector writing `run_file`, or 0.
  static pid_t collector_of(const std::string& run_file) {
    QProcess ps;
    ps.start("ps", {"-eo", "pid=,stat=,args="});
    ps.waitForFinished();
    for (const QString& line : QString::fromUtf8(ps.readAllStandardOutput()).split('\n')) {
      const QStringList f = line.simplified().split(' ');
      if (f.size() >= 3 && !f[1].startsWith('Z') && f[2].endsWith("ddpscope-collector") &&
          line.contains(QString::fromStdString(run_file)))
        return f[0].toInt();
    }
    return 0;
  }

  // testJobRecordsEveryRank's checks, each a part of the run file or of a command on it.
  // A failed check returns from the helper only: the test returns after each call that failed.

  // Nothing pending at the end: the hang analysis says every rank is done.
  static void check_nothing_pending(RunStoreReader& store, int ranks, int iters) {
    const HangReport hang = analyze_hang(store);
    QCOMPARE(int(hang.ranks.size()), ranks);
    for (const RankHangState& s : hang.ranks) {
      QCOMPARE(s.phase, std::string("done"));
      QCOMPARE(s.completed_iterations, int64_t(iters));
      QVERIFY(!s.blocked_in && s.missing_grads.empty() && s.buckets_waiting_for_grads.empty());
    }
    QCOMPARE(hang.findings.at(0), std::string("every rank finished its 12 iterations; nothing is pending"));
  }

  // One rank's row, its spans of every kind, buckets, parameters, graph and metrics.
  static void check_rank_records(RunStoreReader& store, const RankRow& k, int iters) {
    QVERIFY(!k.host.empty());
    QCOMPARE(k.events_dropped, int64_t(0));
    // One host: the measured offsets are the measurement error only.
    QVERIFY2(std::llabs(k.clock_offset_ns) < 5'000'000,
             qPrintable(QString("rank %1 offset %2 ns").arg(k.rank).arg(k.clock_offset_ns)));
    QVERIFY(k.clock_rtt_ns > 0);
    // Every kind the engine records, on every rank.
    for (Kind kind :
         {Kind::Iteration, Kind::Forward, Kind::Backward, Kind::Optimizer, Kind::AutogradNode, Kind::GradReady,
          Kind::BucketCopy, Kind::BucketReady, Kind::Allreduce, Kind::Finalize, Kind::PgOp}) {
      QVERIFY2(!store.spans({.kinds = {kind}, .rank = k.rank, .limit = 1}).empty(),
               qPrintable(QString("rank %1 has no %2 span").arg(k.rank).arg(kind_name(kind))));
    }
    QCOMPARE(int(store.spans({.kinds = {Kind::Iteration}, .rank = k.rank}).size()), iters);
    // Small buckets (after the 1 MiB first one): several per iteration, each reduced once
    // per iteration.
    const auto buckets = store.buckets(k.rank, 0);
    QVERIFY(buckets.size() > 2);
    QCOMPARE(store.spans({.kinds = {Kind::Allreduce}, .rank = k.rank}).size(), buckets.size() * iters);
    QVERIFY(!store.buckets(k.rank, 1).empty());  // the rebuild after the first iteration
    const auto params = store.params(k.rank, 0);
    QCOMPARE(params.size(), size_t(8));
    QCOMPARE(params[0].name, std::string("module.layers.0.weight"));
    const GraphRows g = store.graph(k.rank);
    QCOMPARE(g.iteration, int64_t(1));
    QVERIFY(std::count_if(g.nodes.begin(), g.nodes.end(),
                          [](const GraphNodeRow& n) { return n.kind == "accumulate_grad"; }) == 8);
    QCOMPARE(int(store.metrics("loss", k.rank).size()), iters);
  }

  // `ddpscope-cli stats` on the run: its summary and iterations are consistent.
  void check_stats(const std::string& path, int ranks, int iters) {
    Result stats = run({"stats", QString::fromStdString(path)});
    QVERIFY2(stats.code == 0, qPrintable(stats.err));
    const QJsonObject s = QJsonDocument::fromJson(stats.out.toUtf8()).object();
    QCOMPARE(s["run"].toObject()["status"].toString(), QString("finished"));
    QCOMPARE(s["iterations"].toArray().size(), ranks * iters);
    QCOMPARE(s["summary"].toArray().size(), ranks);
    for (const QJsonValue& v : s["summary"].toArray()) {
      const double ratio = v.toObject()["overlap_ratio"].toDouble(-1);
      QVERIFY2(ratio >= 0 && ratio <= 1, qPrintable(QString::number(ratio)));
      QVERIFY(v.toObject()["mean_comm_ms"].toDouble() > 0);
    }
    for (const QJsonValue& v : s["iterations"].toArray()) {
      const QJsonObject it = v.toObject();
      QVERIFY(it["exposed_comm_ms"].toDouble() <= it["comm_ms"].toDouble() + 1e-9);
      QVERIFY(it["iteration_ms"].toDouble() >= it["forward_ms"].toDouble());
    }
    QVERIFY(s["buckets"].toArray().size() > 0);
  }

  // `ddpscope-cli export --chrome`: one trace process per rank.
  void check_chrome_export(const std::string& path, int ranks) {
    const QString trace = dir_.filePath(QString("job%1.json").arg(ranks));
    Result exported = run({"export", QString::fromStdString(path), "--chrome", trace});
    QVERIFY2(exported.code == 0, qPrintable(exported.err));
    QFile f(trace);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject t = QJsonDocument::fromJson(f.readAll()).object();
    std::set<int> trace_pids;
    for (const QJsonValue& v : t["traceEvents"].toArray())
      trace_pids.insert(v.toObject()["pid"].toInt());
    QCOMPARE(int(trace_pids.size()), ranks);  // one process per rank
  }

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
    QCOMPARE(stalled.current_iteration, int64_t(4));
    QCOMPARE(stalled.phase, std::string("after forward"));
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
    const Result stats = run({"stats", "--summary", QString::fromStdString(path)});
    const QJsonObject s = QJsonDocument::fromJson(stats.out.toUtf8()).object();
    const auto cut_json = s["cut_short"].toArray();
    QCOMPARE(cut_json.size(), 1);
    QCOMPARE(cut_json[0].toObject()["rank"].toInt(), 0);
    QCOMPARE(cut_json[0].toObject()["iteration"].toInt(), 4);
    for (const auto& rank : s["summary"].toArray())
      QVERIFY2(rank.toObject()["mean_iteration_ms"].toDouble() < 500, qPrintable(stats.out));
  }

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

QTEST_GUILESS_MAIN(TestRunFiles)
#include "tst_run_files.moc"
