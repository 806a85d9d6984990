// ddpscope-cli train --np N: the job runs under mpirun as one job with one progress
// display, JSON progress for programs, a rank's unused parameter named, one run of one
// job a run file, a loss turned NaN recorded and named, bad input refused, and each rank's
// BLAS pool sized to its math threads, and no OpenMPI files left by a job stopped at once.
#include <QtTest/QtTest>

#include "launcher_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::launcher_fixture;

class TestJobLauncher : public LauncherTest {
  Q_OBJECT

 private slots:

  void testRanksRunAsOneJob_data() {
    QTest::addColumn<int>("ranks");
    QTest::newRow("2 ranks") << 2;
    QTest::newRow("4 ranks") << 4;
  }

  void testRanksRunAsOneJob() {
    QFETCH(int, ranks);
    Result r = run({"train", "--np", QString::number(ranks), "--iters", "20", "--batch", "8", "--log-every", "10"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains(QString("on %1 ranks (mpi backend)").arg(ranks)), qPrintable(r.out));
    QCOMPARE(r.out.count("iter 20/20 loss"), 1);  // progress once for the job, not per rank
    QVERIFY2(r.out.contains("done: 20 iterations"), qPrintable(r.out));
  }

  // --progress json: what the desktop app reads. DDP options the app's launch dialog
  // offers (static graph, comm hook) reach the ranks.
  void testJsonProgressForPrograms() {
    Result r = run({"train", "--np", "2", "--iters", "6", "--batch", "8", "--static-graph", "--comm-hook", "bf16",
                    "--progress", "json", "--no-probes"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QList<QJsonObject> events;
    for (const QString& line : r.out.split('\n')) {
      if (!line.startsWith("@ddpscope ")) continue;
      const QJsonDocument doc = QJsonDocument::fromJson(line.mid(10).toUtf8());
      QVERIFY2(doc.isObject(), qPrintable(line));
      events << doc.object();
    }
    QVERIFY2(events.size() >= 4, qPrintable(r.out));
    QCOMPARE(events.first()["event"].toString(), QString("start"));
    QCOMPARE(events.first()["world_size"].toInt(), 2);
    QCOMPARE(events[1]["event"].toString(), QString("progress"));
    QCOMPARE(events[1]["iter"].toInt(), 1);
    QCOMPARE(events[1]["total"].toInt(), 6);
    const QJsonObject last = events[events.size() - 2];
    QCOMPARE(last["iter"].toInt(), 6);
    QVERIFY(std::isfinite(last["loss"].toDouble()));
    QCOMPARE(events.last()["event"].toString(), QString("done"));
  }

  // An unused parameter on one rank without --find-unused-parameters: that rank fails at
  // once naming the parameters, instead of its next collective meeting the others'
  // pending allreduce (MPI aborted with MPI_ERR_TRUNCATE before).
  void testUnusedParameterOnOneRankIsNamed() {
    Result r = run(
        {"train", "--np", "2", "--model", "mlp", "--depth", "3", "--iters", "5", "--inject-unused", "1", "--no-probes"},
        {{"DDPSCOPE_PG_TIMEOUT_MS", "5000"}});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains("rank 1") && r.err.contains("produced no gradient for module.layers.2.weight") &&
                 r.err.contains("--find-unused-parameters"),
             qPrintable(r.err));
    QCOMPARE(workers_running(), 0);
  }

  // A run file holds one run of one job: an existing run is refused unless
  // --force replaces it (and then nothing of it survives); a file that is not a run is
  // never touched; a second job given the file of a running one is refused at start,
  // with the running job named.
  void testRunFileHoldsOneRunOfOneJob() {
    QTemporaryDir dir;
    const QString path = dir.filePath("one.ddprun");
    const auto iterations = [&] {
      ddpscope::probes::RunStoreReader reader(path.toStdString());
      return static_cast<int64_t>(reader.spans({.kinds = {ddpscope::probes::Kind::Iteration}, .rank = 0}).size());
    };
    Result first = run({"train", "--np", "2", "--iters", "12", "--out", path, "--progress", "lines"});
    QVERIFY2(first.code == 0, qPrintable(first.err));
    QCOMPARE(iterations(), int64_t{12});
    const QByteArray before = [&] {
      QFile f(path);
      f.open(QIODevice::ReadOnly);
      return f.readAll();
    }();

    Result again = run({"train", "--iters", "3", "--out", path});
    QVERIFY(again.code != 0);
    QVERIFY2(again.err.contains("already holds a finished run (mlp, 2 ranks") && again.err.contains("add --force"),
             qPrintable(again.err));
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), before);  // untouched
    f.close();

    Result forced = run({"train", "--np", "2", "--iters", "4", "--out", path, "--force", "--progress", "lines"});
    QVERIFY2(forced.code == 0, qPrintable(forced.err));
    QCOMPARE(iterations(), int64_t{4});  // the new run only

    const QString text = dir.filePath("notes.txt");
    QFile notes(text);
    QVERIFY(notes.open(QIODevice::WriteOnly));
    notes.write("my notes\n");
    notes.close();
    Result not_run = run({"train", "--iters", "3", "--out", text, "--force"});
    QVERIFY(not_run.code != 0);
    QVERIFY2(not_run.err.contains("is not a ddpscope run file; it is left untouched"), qPrintable(not_run.err));
    QVERIFY(notes.open(QIODevice::ReadOnly));
    QCOMPARE(notes.readAll(), QByteArray("my notes\n"));
    notes.close();

    // Two jobs, one file: the second is refused while the first runs, naming it.
    const QString shared = dir.filePath("shared.ddprun");
    QProcess long_job;
    long_job.start(DDPSCOPE_CLI_PATH, {"train", "--np", "2", "--iters", "1000000", "--out", shared, "--progress",
                                       "lines", "--log-every", "1000"});
    QVERIFY(long_job.waitForStarted());
    QByteArray long_out;
    QTRY_VERIFY_WITH_TIMEOUT((long_out += long_job.readAllStandardOutput()).contains("iter 1/"), 30000);
    Result second = run({"train", "--np", "2", "--iters", "3", "--out", shared, "--force"});
    QVERIFY(second.code != 0);
    QVERIFY2(second.err.contains("is being written by another job (pid " + QString::number(long_job.processId())) &&
                 second.err.contains("--iters 1000000"),
             qPrintable(second.err));
    long_job.terminate();
    QVERIFY(long_job.waitForFinished(30000));
    ddpscope::probes::RunStoreReader reader(shared.toStdString());
    QCOMPARE(QString::fromStdString(reader.run().status), QString("stopped"));
    QCOMPARE(reader.run().world_size, 2);  // the first job's run, not mixed with another
    QCOMPARE(workers_running(), 0);
  }

  // A learning rate far too high: the loss turns NaN in iteration 2. The progress says so
  // once, every iteration's loss is in the run file (NaN kept, not skipped), and `stats`
  // names the first rank and parameter whose gradient was not finite.
  void testNonFiniteLossIsRecordedAndNamed() {
    QTemporaryDir dir;
    const QString path = dir.filePath("nan.ddprun");
    Result r = run({"train", "--np", "2", "--lr", "1e30", "--iters", "6", "--out", path, "--progress", "lines",
                    "--log-every", "100"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("iter 2/6 loss nan") && r.out.count("warning: the loss is nan from iteration 2 on") == 1,
             qPrintable(r.out));
    ddpscope::probes::RunStoreReader reader(path.toStdString());
    int finite = 0, nan = 0;
    for (const auto& m : reader.metrics("loss"))
      (std::isnan(m.value) ? nan : finite) += 1;
    QCOMPARE(finite, 2);  // iteration 1 on both ranks
    QCOMPARE(nan, 10);
    Result stats = run({"stats", "--summary", "--json", path});
    QCOMPARE(stats.code, 0);
    const QJsonObject first = QJsonDocument::fromJson(stats.out.toUtf8()).object().value("nonfinite").toObject();
    QCOMPARE(first.value("loss").toObject().value("iteration").toInt(), 2);
    const QJsonObject gradient = first.value("gradient").toObject();
    QCOMPARE(gradient.value("iteration").toInt(), 2);
    QVERIFY(gradient.value("rank").toInt() == 0 || gradient.value("rank").toInt() == 1);
    QVERIFY2(gradient.value("parameter").toString().endsWith(".weight") ||
                 gradient.value("parameter").toString().endsWith(".bias"),
             qPrintable(stats.out));
  }

  // Each rank's OpenBLAS pool is sized to its math threads before the library loads (it
  // spun ~0.1 s per pool thread otherwise): OPENBLAS_NUM_THREADS in the ranks' environment
  // is --threads (1 by default), or what the user set.
  void testRanksBlasThreadsFollowTheirMathThreads_data() {
    QTest::addColumn<QStringList>("extra");
    QTest::addColumn<QString>("users");
    QTest::addColumn<QByteArray>("expected");
    QTest::newRow("default") << QStringList{} << QString() << QByteArray("1");
    QTest::newRow("--threads 2") << QStringList{"--threads", "2"} << QString() << QByteArray("2");
    QTest::newRow("the user's own") << QStringList{} << QString("3") << QByteArray("3");
  }

  void testRanksBlasThreadsFollowTheirMathThreads() {
    QFETCH(QStringList, extra);
    QFETCH(QString, users);
    QFETCH(QByteArray, expected);
    QProcess job;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("OPENBLAS_NUM_THREADS");
    if (!users.isEmpty()) env.insert("OPENBLAS_NUM_THREADS", users);
    job.setProcessEnvironment(env);
    job.start(DDPSCOPE_CLI_PATH, QStringList{"train", "--np", "2", "--iters", "1000000", "--batch", "8", "--no-probes",
                                             "--progress", "lines", "--log-every", "100000"} +
                                     extra);
    QList<QList<QByteArray>> ranks;
    QTRY_VERIFY_WITH_TIMEOUT((ranks = ddpscope_tests::own_process_environments("ddpscope-worker")).size() == 2, 60000);
    job.terminate();  // the launcher ends the job on SIGTERM
    QVERIFY(job.waitForFinished(60000));
    for (const auto& rank : ranks) {
      QByteArray blas;
      for (const QByteArray& entry : rank)
        if (entry.startsWith("OPENBLAS_NUM_THREADS=")) blas = entry;
      QCOMPARE(blas, "OPENBLAS_NUM_THREADS=" + expected);
    }
    QCOMPARE(workers_running(), 0);
  }

  // A second Ctrl-C ends mpirun at once (SIGKILL), before its own cleanup, which left its session
  // directory (~8 MB) and every rank's shared-memory segment on the machine for good: the
  // launcher removes them and says so. (mpirun writes the directory under TMPDIR: a private
  // one here.)
  void testTwoInterruptsLeaveNoOpenMpiFilesBehind() {
    QTemporaryDir tmp;
    QProcess job;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("TMPDIR", tmp.path());
    env.remove("OMPI_MCA_orte_tmpdir_base");
    job.setProcessEnvironment(env);
    job.start(DDPSCOPE_CLI_PATH, {"train", "--np", "2", "--iters", "10000000", "--batch", "8", "--no-probes",
                                  "--progress", "lines", "--log-every", "1000000"});
    QTRY_VERIFY_WITH_TIMEOUT(ddpscope_tests::own_processes("ddpscope-worker") == 2, 60000);
    QString session;  // <TMPDIR>/ompi.<node>.<uid>/pid.<mpirun>
    for (const QString& top : QDir(tmp.path()).entryList({"ompi.*"}, QDir::Dirs))
      for (const QString& pid : QDir(tmp.path() + "/" + top).entryList({"pid.*"}, QDir::Dirs))
        session = tmp.path() + "/" + top + "/" + pid;
    QVERIFY2(!session.isEmpty(), "mpirun made no session directory under TMPDIR");
    QFile contact(session + "/contact.txt");
    QVERIFY(contact.open(QIODevice::ReadOnly));
    const qulonglong family = contact.readAll().split('.').first().toULongLong() >> 16;
    const QString segments = QString("vader_segment.*.%1.%2????.*").arg(getuid()).arg(family, 0, 16);
    QTRY_COMPARE_WITH_TIMEOUT(QDir("/dev/shm").entryList({segments}, QDir::Files).size(), 2,
                              30000);  // MPI_Init made them

    // mpirun held still, as one too busy to end the ranks before the second Ctrl-C (which
    // would otherwise race its cleanup, and two signals sent at once arrive as one).
    const pid_t mpirun = QFileInfo(session).fileName().mid(4).toInt();
    QVERIFY(mpirun > 0 && ::kill(mpirun, SIGSTOP) == 0);
    ::kill(static_cast<pid_t>(job.processId()), SIGINT);
    QString err;
    QTRY_VERIFY_WITH_TIMEOUT((err += job.readAllStandardError()).contains("stopping the job"), 30000);
    ::kill(static_cast<pid_t>(job.processId()), SIGINT);  // the second: stop now
    QVERIFY(job.waitForFinished(60000));
    QCOMPARE(job.exitCode(), 130);
    err += job.readAllStandardError();
    QVERIFY2(err.contains("launcher: mpirun was killed before its own cleanup; removed what it left (3 paths, "),
             qPrintable(err));
    QVERIFY2(!QFileInfo::exists(session), qPrintable(session));
    QCOMPARE(QDir("/dev/shm").entryList({segments}, QDir::Files), QStringList());
    QCOMPARE(workers_running(), 0);
  }

  void testBadLaunchArguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("negative ranks") << QStringList{"train", "--np", "-1"} << "--np";
    QTest::newRow("unknown backend") << QStringList{"train", "--np", "2", "--backend", "gloo"} << "gloo";
    QTest::newRow("missing hostfile") << QStringList{"train", "--np", "2", "--hostfile", "/nonexistent/hosts"}
                                      << "does not exist";
    QTest::newRow("bad stall") << QStringList{"train", "--np", "2", "--inject-stall", "1:0"}
                               << "RANK:ITERATION:SECONDS";
    QTest::newRow("unknown comm hook") << QStringList{"train", "--np", "2", "--comm-hook", "int8"} << "int8";
    QTest::newRow("unknown progress style") << QStringList{"train", "--np", "2", "--progress", "fancy"} << "fancy";
    QTest::newRow("backend without ranks") << QStringList{"train", "--backend", "nccl"} << "add --np N";
    QTest::newRow("remote embedding without ranks")
        << QStringList{"train", "--model", "transformer", "--remote-embedding"} << "--np 2 or more";
    QTest::newRow("remote embedding of an mlp")
        << QStringList{"train", "--np", "3", "--remote-embedding"} << "add --model transformer";
    QTest::newRow("remote embedding without DDP")
        << QStringList{"train", "--np", "3", "--model", "transformer", "--remote-embedding", "--no-overlap"}
        << "drop --no-overlap";
    QTest::newRow("unused layer of a transformer")
        << QStringList{"train", "--np", "2", "--model", "transformer", "--inject-unused", "1"} << "--model mlp";
    QTest::newRow("example with --out and --no-probes")
        << QStringList{"example", "seed", "--np", "2", "--no-probes", "--out", "/tmp/never.ddprun"}
        << "drop one of them";
    QTest::newRow("more ranks than this machine takes")
        << QStringList{"train", "--np", "100000"} << "add --oversubscribe";
    QTest::newRow("more example workers than this machine takes")
        << QStringList{"example", "seed", "--np", "4096"} << "per core";
    QTest::newRow("bad option checked before launch")
        << QStringList{"train", "--np", "2", "--model", "transformer", "--width", "30"} << "divisible";
  }

  void testBadLaunchArguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    Result r = run(args);
    QVERIFY(r.code != 0);
    QVERIFY2((r.out + r.err).contains(expected), qPrintable(r.out + r.err));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestJobLauncher)
#include "tst_job_launcher.moc"
