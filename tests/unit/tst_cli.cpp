// ddpscope-cli as a user runs it: files that never end refused by every command, a run
// another user opens read-only, the Kineto round trip, hangs from PyTorch's dumps, ZeRO's
// shards, SyncBatchNorm with uneven inputs, and clear errors for bad arguments.
#include <QtTest/QtTest>

#include "cli_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::cli_fixture;

class TestCli : public CliTest {
  Q_OBJECT

 private slots:

  // Files that never end (a pipe, a device) are refused at once by every command that
  // reads one, saying what the file is (issue 49: import-torch blocked on a FIFO).
  void testFilesThatNeverEndAreRefused() {
    QTemporaryDir dir;
    const QString pipe = dir.filePath("pipe.ddprun"), trace = dir.filePath("pipe.json");
    QCOMPARE(::mkfifo(pipe.toLocal8Bit().constData(), 0600), 0);
    QCOMPARE(::mkfifo(trace.toLocal8Bit().constData(), 0600), 0);
    const QString zero = dir.filePath("zero.json");
    QVERIFY(QFile::link("/dev/zero", zero));
    const QList<QStringList> commands = {{"stats", pipe},
                                         {"hang", pipe},
                                         {"export", pipe, "--chrome", dir.filePath("o.json")},
                                         {"compare", pipe, pipe},
                                         {"import-torch", trace, "--out", dir.filePath("t.ddprun")},
                                         {"import-torch", zero, "--out", dir.filePath("z.ddprun")}};
    for (const QStringList& args : commands) {
      QElapsedTimer clock;
      clock.start();
      const Result r = run(args);
      QVERIFY2(r.code != 0 && clock.elapsed() < 10000, qPrintable(args.join(' ')));
      QVERIFY2(r.err.contains("is a pipe") || r.err.contains("is a device") || r.err.contains("not a regular file"),
               qPrintable(args.join(' ') + ": " + r.err));
    }
  }

  // A finished run is one file that anyone who can read it can open: in a read-only
  // folder, as another user (root runs this as 'nobody'), with nothing created beside it.
  void testReadOnlyRunOpensForAnotherUser() {
    QTemporaryDir dir;
    const QString run_file = dir.filePath("shared.ddprun");
    QCOMPARE(run({"train", "--iters", "3", "--batch", "8", "--out", run_file}).code, 0);
    const QStringList files = QDir(dir.path()).entryList(QDir::Files | QDir::Hidden);
    QCOMPARE(files, QStringList{"shared.ddprun"});  // no -wal, no -shm left by the writer
    QVERIFY(QFile::setPermissions(run_file, QFile::ReadOwner | QFile::ReadGroup | QFile::ReadOther));
    QVERIFY(QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::ExeOwner | QFile::ReadGroup | QFile::ExeGroup |
                                                  QFile::ReadOther | QFile::ExeOther));
    QProcess p;
    if (geteuid() == 0) {
      p.start("runuser", {"-u", "nobody", "--", DDPSCOPE_CLI_PATH, "stats", "--summary", "--json", run_file});
    } else {
      p.start(DDPSCOPE_CLI_PATH, {"stats", "--summary", "--json", run_file});
    }
    QVERIFY(p.waitForFinished(60000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QVERIFY2(p.exitCode() == 0, qPrintable(err));
    QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains("\"status\": \"finished\""));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), files);
    QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  }

  // export --kineto writes one PyTorch (Kineto-form) trace per rank, and import-torch
  // reads them back into the same run: every span, thread and metric, and the same
  // statistics. A 2-rank DDP job (several buckets) and a distributed autograd example.
  void testKinetoRoundTrip_data() {
    QTest::addColumn<QStringList>("job");
    QTest::addColumn<bool>("iterations");
    QTest::newRow("ddp") << QStringList{"train",           "--np", "2", "--iters", "5", "--batch", "16",
                                        "--bucket-cap-mb", "0.02"}
                         << true;
    QTest::newRow("dist autograd") << QStringList{"example", "seed", "--np", "2"} << false;
  }

  void testKinetoRoundTrip() {
    QFETCH(QStringList, job);
    QFETCH(bool, iterations);
    QTemporaryDir dir;
    const QString original = dir.filePath("job.ddprun"), again = dir.filePath("again.ddprun");
    Result r = run(job + QStringList{"--out", original});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    r = run({"export", original, "--kineto", dir.filePath("traces")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("wrote 2 traces"), qPrintable(r.out));
    QVERIFY(QFile::exists(dir.filePath("traces/rank0.pt.trace.json")));
    QVERIFY(QFile::exists(dir.filePath("traces/rank1.pt.trace.json")));
    // A second export into the same folder needs --force.
    r = run({"export", original, "--kineto", dir.filePath("traces")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("pass --force"), qPrintable(r.err));
    r = run({"import-torch", dir.filePath("traces"), "--out", again});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("clock as ddpscope exported it"), qPrintable(r.out));
    const QStringList before = run_events(original, dir.path()), after = run_events(again, dir.path());
    QVERIFY(before.size() > 100);
    QCOMPARE(after.size(), before.size());
    for (int i = 0; i < before.size(); ++i)
      QCOMPARE(after[i], before[i]);
    const QJsonObject stats_before = stats_of(original), stats_after = stats_of(again);
    QCOMPARE(stats_before["iterations"].toArray().size(), iterations ? 10 : 0);  // 5 on each rank
    QCOMPARE(stats_before["ranks"].toArray().size(), 2);
    // Except "late" (why's iterations): a trace's iterations are sampled from a longer job, so
    // the imported run's analysis keeps its first and last, which the job's leaves out.
    for (const QString& key : stats_before.keys())
      if (key != "late") QCOMPARE(stats_after[key], stats_before[key]);
  }

  // PyTorch's flight-recorder dumps (tests/torch/make_flight_dumps.py: 4 ranks, rank 2
  // gathers where the others allreduce): the verdict and grid straight from them, and
  // the same verdict from the run import-torch makes of them.
  void testHangFromPyTorchFlightDumps() {
    QStringList dumps;
    for (int r = 0; r < 4; ++r)
      dumps << QString(DDPSCOPE_TORCH_FIXTURES "/flight_4_ranks/nccl_trace_rank_%1").arg(r);
    const Result direct = run(QStringList{"hang"} + dumps);
    QVERIFY2(direct.code == 0, qPrintable(direct.err));
    const QString verdict =
        "Group '0' collective #6: collective type mismatch. Rank 2 called all_gather Float[1] -> Float[4] in "
        "train_step at train.py:61 where ranks 0, 1 and 3 called all_reduce Float[6553600] in train_step at "
        "train.py:58.";
    QVERIFY2(direct.out.startsWith(verdict), qPrintable(direct.out));
    QVERIFY2(direct.out.contains(QRegularExpression(R"(\n2 +C +C +C +C +S +all_gather Float\[1\] -> Float\[4\]\n)")),
             qPrintable(direct.out));
    QTemporaryDir dir;
    const QString out = dir.filePath("fr.ddprun");
    const Result imported = run(QStringList{"import-torch"} + dumps + QStringList{"--out", out});
    QVERIFY2(imported.code == 0, qPrintable(imported.err));
    QVERIFY2(imported.out.contains("imported 4 ranks' flight-recorder dumps (world size 4), 24 records"),
             qPrintable(imported.out));
    const Result from_run = run({"hang", out});
    QVERIFY2(from_run.out.startsWith(verdict), qPrintable(from_run.out));
    // The dumps say nothing of DDP's buckets: no "gradients missing: 0 of 0" line.
    QVERIFY2(from_run.out.contains("rank 2: no iterations recorded") && !from_run.out.contains("buckets waiting"),
             qPrintable(from_run.out));
    // A run file among dumps: refused, saying why.
    const Result mixed = run({"hang", dumps[0], out});
    QVERIFY(mixed.code != 0);
    QVERIFY2(mixed.err.contains("is a run file given with other files"), qPrintable(mixed.err));
  }

  // `hang FOLDER` and `import-torch FOLDER` on dumps PyTorch 2.11 wrote (gloo, 4 ranks,
  // rank 2 lost), JSON and pickles mixed, with a file that is not a dump beside them.
  void testHangOnAFolderOfRealDumps() {
    QTemporaryDir dir;
    const QString real = DDPSCOPE_TORCH_FIXTURES "/../../probes/data/torch_2_11_flight/gloo-4-size/";
    QVERIFY(QFile::copy(real + "json/rank_0.json", dir.filePath("rank_0.json")));
    QVERIFY(QFile::copy(real + "pickle/rank_1", dir.filePath("rank_1")));
    QVERIFY(QFile::copy(real + "pickle/rank_3", dir.filePath("rank_3.pkl")));
    QFile notes(dir.filePath("notes.txt"));
    QVERIFY(notes.open(QIODevice::WriteOnly));
    notes.write("rank 2 was killed\n");
    notes.close();
    const Result hang = run({"hang", dir.path()});
    QVERIFY2(hang.code == 0, qPrintable(hang.err));
    QVERIFY2(hang.out.startsWith("Group '0' collective #19: size mismatch. Rank 3 called all_reduce Float[2048]"),
             qPrintable(hang.out));
    QVERIFY2(hang.out.contains("no dump of rank 2"), qPrintable(hang.out));
    QVERIFY2(hang.err.contains("skipped notes.txt: it is neither JSON nor a pickle"), qPrintable(hang.err));
    QTemporaryDir out;
    const Result imported = run({"import-torch", dir.path(), "--out", out.filePath("fr.ddprun")});
    QVERIFY2(imported.code == 0, qPrintable(imported.err));
    QVERIFY2(imported.out.contains("imported 3 ranks' flight-recorder dumps (world size 4)") &&
                 imported.out.contains("note: no dump of rank 2"),
             qPrintable(imported.out));
  }

  // train --zero-overlap: the run file holds each rank's partition (every parameter owned
  // by one rank, the same on both), each rank's optimizer-state bytes (about half of
  // plain Adam's), and the post-step broadcasts as param_sync spans; `advise` knows it.
  void testZeroJobRecordsItsShards() {
    QTemporaryDir dir;
    const QString zero = dir.filePath("zero.ddprun"), plain = dir.filePath("plain.ddprun");
    const QStringList job{"train", "--np", "2", "--iters", "8", "--optimizer", "adam", "--bucket-cap-mb", "0.02"};
    Result r = run(job + QStringList{"--zero-overlap", "--out", zero});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("ZeRO overlapped with DDP"), qPrintable(r.out));
    r = run(job + QStringList{"--out", plain});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    using namespace ddpscope::probes;
    RunStoreReader z(zero.toStdString()), p(plain.toStdString());
    const auto shards0 = z.zero_shards(0), shards1 = z.zero_shards(1);
    QCOMPARE(shards0.size(), p.params(0, 0).size());
    QCOMPARE(shards1.size(), shards0.size());
    int64_t owned[2] = {0, 0};
    for (size_t i = 0; i < shards0.size(); ++i) {
      QCOMPARE(shards1[i].owner, shards0[i].owner);
      QCOMPARE(shards0[i].name, p.params(0, 0)[i].name);
      owned[shards0[i].owner] += shards0[i].numel;
    }
    QVERIFY2(owned[0] > 0 && owned[1] > 0, "one rank owns everything");
    int64_t largest = 0;
    for (const auto& s : shards0)
      largest = std::max(largest, s.numel);
    const double whole = p.metrics("optimizer_state_bytes", 0).back().value;
    double sum = 0;
    for (int rank : {0, 1}) {
      const double mine = z.metrics("optimizer_state_bytes", rank).back().value;
      QCOMPARE(mine, double(owned[rank] * 4 * 2));  // f32 Adam: two moments per element
      QVERIFY2(mine <= whole / 2 + double(largest * 4 * 2),
               qPrintable(QString("rank %1: %2 of %3 B").arg(rank).arg(mine).arg(whole)));
      sum += mine;
    }
    QCOMPARE(sum, whole);
    const auto syncs = z.spans({.kinds = {Kind::ParamSync}, .rank = 0});
    QCOMPARE(int(syncs.size()), 8);
    QCOMPARE(syncs.front().bytes, (owned[0] + owned[1]) * 4);
    QVERIFY(p.spans({.kinds = {Kind::ParamSync}}).empty());
    // Bucket advice on a ZeRO run offers no fused optimizer (ZeRO owns the step) and says so.
    r = run({"advise", zero});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(!r.out.contains("best cap with the fused optimizer") && r.out.contains("this run used ZeRO"),
             qPrintable(r.out));
    r = run({"advise", plain});
    QVERIFY2(r.out.contains("best cap with the fused optimizer"), qPrintable(r.out));
  }

  // --sync-bn: with --join the job is refused before it starts (a joined rank cannot stand
  // in for SyncBatchNorm's collectives); with --join-throw every rank stops when rank 1's
  // data runs out, and the job ends normally after those iterations.
  void testSyncBatchNormWithUnevenInputs() {
    QTemporaryDir dir;
    const QStringList job{"train", "--np", "2", "--iters", "10", "--sync-bn", "--inject-uneven", "1:4"};
    Result r = run(job + QStringList{"--join", "--no-probes"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("use --join-throw"), qPrintable(r.err));
    const QString out = dir.filePath("bn.ddprun");
    r = run(job + QStringList{"--join-throw", "--out", out});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("done: 4 of 10 iterations"), qPrintable(r.out));
    QVERIFY2(r.err.contains("training stopped on every rank"), qPrintable(r.err));
    ddpscope::probes::RunStoreReader run_file(out.toStdString());
    QCOMPARE(QString::fromStdString(run_file.run().status), QString("finished"));
    for (int rank : {0, 1}) {
      const auto iterations = run_file.spans({.kinds = {ddpscope::probes::Kind::Iteration}, .rank = rank});
      QCOMPARE(int(iterations.size()), 4);
    }
  }

  void testBadArguments_data() {
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<QString>("expected");
    QTest::newRow("unknown model") << QStringList{"train", "--model", "resnet"} << "resnet";
    QTest::newRow("zero iterations") << QStringList{"train", "--iters", "0"} << "--iters";
    QTest::newRow("negative batch") << QStringList{"train", "--batch", "-4"} << "--batch";
    QTest::newRow("not a number") << QStringList{"train", "--width", "wide"} << "--width";
    QTest::newRow("heads do not divide width")
        << QStringList{"train", "--model", "transformer", "--width", "30", "--heads", "4"} << "divisible";
    QTest::newRow("wrong data for model")
        << QStringList{"train", "--model", "transformer", "--data", "digits"} << "--data";
    QTest::newRow("negative learning rate") << QStringList{"train", "--lr", "-1"} << "must not be negative";
    QTest::newRow("no subcommand") << QStringList{} << "subcommand";
    QTest::newRow("data file for generated data")
        << QStringList{"train", "--data", "regression", "--data-path", "/etc/hostname"} << "drop --data-path";
    QTest::newRow("missing data file") << QStringList{"train", "--data", "digits", "--data-path",
                                                      "/nonexistent/digits.csv"}
                                       << "cannot open";
  }

  void testBadArguments() {
    QFETCH(QStringList, args);
    QFETCH(QString, expected);
    Result r = run(args);
    QVERIFY2(r.code != 0, qPrintable(r.out));
    QVERIFY2((r.err + r.out).contains(expected), qPrintable(r.err + r.out));
    QVERIFY2(r.err.size() < 300, qPrintable("error message too long: " + r.err));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
