// Whole jobs through the CLI for the run-file tests: the job's environment, its run to
// the end, a job started and left running, and the run files in a folder of the test's.
#pragma once

#include <QtTest/QtTest>

#include <signal.h>
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

namespace ddpscope::testing::run_files_fixture {

using namespace ddpscope::probes;

// What the tests of this fixture share.
class RunFilesTest : public QObject {
 protected:
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
      QVERIFY(s.phase == probes::HangPhase::Done);
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
    Result stats = run({"stats", "--json", QString::fromStdString(path)});
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
};

}  // namespace ddpscope::testing::run_files_fixture
