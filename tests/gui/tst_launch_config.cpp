// The Launch dialog's settings: each bad setting named with what is wrong, presets
// saved and loaded (bad files refused), extra arguments split as a shell would.
#include <QtTest/QtTest>
#include <sys/stat.h>

#include <QFile>
#include <QJsonObject>
#include <QJsonDocument>

#include "launch_config.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLaunchConfig : public ScratchTest {
  Q_OBJECT

 private slots:
  void testLaunchConfigIsValidByDefault() { QVERIFY(validate(LaunchConfig{}).isEmpty()); }

  // One setting changed from the defaults (as a preset would hold it): the problem is
  // named under that setting, saying what is wrong; a good change has none.
  void testLaunchConfigProblem_data() {
    QTest::addColumn<QString>("change");   // JSON merged over the defaults
    QTest::addColumn<QString>("setting");  // where the problem is named; empty: none
    QTest::addColumn<QString>("says");
    // clang-format off: a row a line, as a table reads
    QTest::newRow("no ranks") << R"({"world_size": 0})"
                              << "world_size"
                              << "";
    QTest::newRow("no iterations") << R"({"iterations": 0})"
                                   << "iterations"
                                   << "";
    QTest::newRow("empty batch") << R"({"batch": 0})"
                                 << "batch"
                                 << "";
    QTest::newRow("zero bucket cap") << R"({"bucket_cap_mb": 0})"
                                     << "bucket_cap_mb"
                                     << "";
    QTest::newRow("unknown model") << R"({"model": "resnet"})"
                                   << "model"
                                   << "";
    QTest::newRow("unknown hook") << R"({"comm_hook": "int8"})"
                                  << "comm_hook"
                                  << "";
    QTest::newRow("missing hostfile") << R"({"hostfile": "/no/such/hosts"})"
                                      << "hostfile"
                                      << "/no/such/hosts";
    QTest::newRow("nccl, 2 ranks, one machine") << R"({"backend": "nccl"})"
                                                << "backend"
                                                << "a GPU per rank";
    QTest::newRow("unknown backend") << R"({"backend": "gloo"})"
                                     << "backend"
                                     << "mpi or nccl";
    QTest::newRow("launcher's own option") << R"({"extra_arguments": "--np 8"})"
                                           << "extra_arguments"
                                           << "--np";
    QTest::newRow("a word, not an option") << R"({"extra_arguments": "lr 0.1"})"
                                           << "extra_arguments"
                                           << "";
    QTest::newRow("a trainer option") << R"({"extra_arguments": "--lr 0.01"})"
                                      << ""
                                      << "";
    QTest::newRow("unknown job") << R"({"job": "jax"})"
                                 << "job"
                                 << "torch (a PyTorch script)";
    QTest::newRow("script not chosen") << R"({"job": "torch"})"
                                       << "script"
                                       << "the training script";
    QTest::newRow("missing script") << R"({"job": "torch", "script": "/no/train.py"})"
                                    << "script"
                                    << "no such file: /no/train.py";
    QTest::newRow("no interpreter") << R"({"job": "torch", "script": "/etc/hostname", "python": "/no/python3"})"
                                    << "python"
                                    << "a python with torch";
    QTest::newRow("unclosed quote in the script's arguments")
        << "{\"job\": \"torch\", \"script\": \"/etc/hostname\", \"script_arguments\": \"--name \\\"a b\"}"
        << "script_arguments"
        << "quote is not closed";
    QTest::newRow("ZeRO and the fused optimizer") << R"({"zero": true, "fused_optimizer": true})"
                                                  << "fused_optimizer"
                                                  << "ZeRO overlapped with DDP";
    QTest::newRow("SyncBatchNorm on the transformer") << R"({"sync_bn": true, "model": "transformer"})"
                                                      << "sync_bn"
                                                      << "LayerNorm";
    QTest::newRow("ZeRO by hand in extra arguments") << R"({"extra_arguments": "--zero"})"
                                                     << "extra_arguments"
                                                     << "set by the fields above";
    QTest::newRow("ZeRO overlapped, SyncBatchNorm") << R"({"zero_overlap": true, "sync_bn": true})"
                                                    << ""
                                                    << "";
    // A script's job ignores the model's fields: its own arguments may say anything.
    QTest::newRow("a script with any arguments")
        << R"({"job": "torch", "script": "/etc/hostname", "script_arguments": "--np 8 --out x", "iterations": 0})"
        << ""
        << "";
    // clang-format on
  }
  void testLaunchConfigProblem() {
    QFETCH(QString, change);
    QFETCH(QString, setting);
    QFETCH(QString, says);
    QJsonObject json = toJson(LaunchConfig{});
    const QJsonObject patch = QJsonDocument::fromJson(change.toUtf8()).object();
    QVERIFY(!patch.isEmpty());
    for (auto it = patch.begin(); it != patch.end(); ++it)
      json[it.key()] = it.value();
    QString error;
    const LaunchConfig config = launchConfigFromJson(json, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QMap<QString, QString> problems = validate(config);
    if (setting.isEmpty()) {
      QVERIFY2(problems.isEmpty(), qPrintable(problems.values().join("; ")));
    } else {
      QVERIFY2(problems.contains(setting), qPrintable(problems.keys().join(", ")));
      QVERIFY2(problems.value(setting).contains(says), qPrintable(problems.value(setting)));
    }
  }

  // The head count the transformer's width must divide is the one the job will use.
  void testTransformerWidthAndHeads_data() {
    QTest::addColumn<int>("width");
    QTest::addColumn<QString>("extra");
    QTest::addColumn<QString>("setting");
    QTest::addColumn<QString>("says");
    // clang-format off: a row a line, as a table reads
    QTest::newRow("6 heads divide 36") << 36 << "--heads 6"
                                       << ""
                                       << "";
    QTest::newRow("--heads=6 read too") << 36 << "--heads=6"
                                        << ""
                                        << "";
    QTest::newRow("default 4 heads, width 30") << 30 << ""
                                               << "width"
                                               << "its 4 heads";
    QTest::newRow("6 heads, width 32") << 32 << "--heads 6"
                                       << "width"
                                       << "its 6 heads";
    QTest::newRow("no heads") << 32 << "--heads 0"
                              << "extra_arguments"
                              << "--heads";
    // clang-format on
  }
  void testTransformerWidthAndHeads() {
    QFETCH(int, width);
    QFETCH(QString, extra);
    QFETCH(QString, setting);
    QFETCH(QString, says);
    LaunchConfig c;
    c.model = "transformer";
    c.width = width;
    c.extraArguments = extra;
    const QMap<QString, QString> problems = validate(c);
    if (setting.isEmpty()) {
      QVERIFY2(problems.isEmpty(), qPrintable(problems.values().join("; ")));
    } else {
      QVERIFY2(problems.value(setting).contains(says), qPrintable(problems.value(setting)));
    }
  }

  void testPresetsRoundTripAndRefuseBadFiles() {
    LaunchConfig c;
    c.model = "transformer";
    c.worldSize = 4;
    c.bucketCapMb = 5.5;
    c.staticGraph = true;
    c.fusedOptimizer = true;
    c.zeroOverlap = true;
    c.syncBn = true;
    c.commHook = "powersgd";
    c.probes = false;
    c.extraArguments = "--lr 0.01";
    QString error;
    const QString file = scratch_file("preset.json");
    QVERIFY(savePreset(c, file, &error));
    LaunchConfig back;
    QVERIFY2(loadPreset(file, &back, &error), qPrintable(error));
    QCOMPARE(toJson(back), toJson(c));
    const QStringList args = trainArguments(back, "/tmp/x.ddprun");
    QVERIFY(args.join(' ').contains("train --np 4 --backend mpi --model transformer"));
    QVERIFY(args.contains("--static-graph"));
    QVERIFY(args.contains("--fused-optimizer"));
    QVERIFY(!trainArguments(LaunchConfig{}, "/tmp/x.ddprun").contains("--fused-optimizer"));
    QVERIFY(args.contains("--zero-overlap") && args.contains("--sync-bn"));
    for (const char* flag : {"--zero", "--zero-overlap", "--batch-norm", "--sync-bn"})
      QVERIFY(!trainArguments(LaunchConfig{}, "/tmp/x.ddprun").contains(flag));
    QVERIFY(args.contains("--no-probes") && !args.contains("--out"));
    QCOMPARE(args[args.indexOf("--comm-hook") + 1], QString("powersgd"));
    QCOMPARE(args[args.indexOf("--bucket-cap-mb") + 1], QString("5.5"));
    QCOMPARE(args[args.indexOf("--progress") + 1], QString("json"));
    QCOMPARE(args[args.indexOf("--lr") + 1], QString("0.01"));

    auto write = [&](const QString& name, const QByteArray& text) {
      QFile f(scratch_file(name));
      f.open(QIODevice::WriteOnly);
      f.write(text);
      return f.fileName();
    };
    QVERIFY(!loadPreset(write("garbage.json", "{not json"), &back, &error));
    QVERIFY2(error.contains("not a preset"), qPrintable(error));
    QVERIFY(!loadPreset(write("type.json", R"({"world_size": "four"})"), &back, &error));
    QVERIFY2(error.contains("world_size") && error.contains("whole number"), qPrintable(error));
    QVERIFY(!loadPreset(scratch_file("missing.json"), &back, &error));
    QVERIFY(error.contains("cannot read"));
    // A pipe is refused at once, not waited on (issue 49).
    const QString pipe = scratch_file("pipe.json");
    QCOMPARE(::mkfifo(pipe.toLocal8Bit().constData(), 0600), 0);
    QVERIFY(!loadPreset(pipe, &back, &error));
    QVERIFY2(error.contains("is a pipe"), qPrintable(error));
    // Missing keys keep their defaults.
    QVERIFY(loadPreset(write("partial.json", R"({"iterations": 7})"), &back, &error));
    QCOMPARE(back.iterations, 7);
    QCOMPARE(back.worldSize, LaunchConfig{}.worldSize);
  }

  // Extra arguments split as a shell would split words, with nothing run.
  // A PyTorch script's job runs `ddpscope-cli torchrun`: the dialog's fields before "--",
  // the script and its own arguments after it; --check before the script too.
  void testScriptJobRunsTorchrun() {
    LaunchConfig c;
    c.job = "torch";
    c.worldSize = 3;
    c.script = "/home/me/train.py";
    c.python = "/opt/venv/bin/python";
    c.scriptArguments = "--epochs 2 --name 'my run'";
    c.hostfile = "/etc/hosts.mpi";
    const QStringList run = trainArguments(c, "/tmp/r.ddprun");
    QCOMPARE(run, QStringList({"torchrun", "--np", "3", "--python", "/opt/venv/bin/python", "--progress", "json",
                               "--out", "/tmp/r.ddprun", "--hostfile", "/etc/hosts.mpi", "--", "/home/me/train.py",
                               "--epochs", "2", "--name", "my run"}));
    const QStringList check = trainArguments(c, "/tmp/r.ddprun", true);
    QCOMPARE(check.indexOf("--check"), check.indexOf("--") - 1);
    QVERIFY(trainArguments(LaunchConfig{}, "/tmp/r.ddprun", true).endsWith("--check"));
    QString error;
    QCOMPARE(toJson(launchConfigFromJson(toJson(c), &error)), toJson(c));
    QVERIFY(error.isEmpty());
  }

  void testExtraArgumentsSplitLikeShellWords() {
    QString error;
    QCOMPARE(splitArguments(QStringLiteral("--lr 0.01  --save 'my model.bin'"), &error),
             (QStringList{"--lr", "0.01", "--save", "my model.bin"}));
    QCOMPARE(splitArguments(QStringLiteral("--save \"a \\\"b\\\" $(c)\" x\\ y ''"), &error),
             (QStringList{"--save", "a \"b\" $(c)", "x y", ""}));
    QCOMPARE(splitArguments(QStringLiteral("a;b `c` $(d)"), &error), (QStringList{"a;b", "`c`", "$(d)"}));
    QVERIFY(error.isEmpty());
    splitArguments(QStringLiteral("--save 'open"), &error);
    QCOMPARE(error, QStringLiteral("a ' quote is not closed"));
    LaunchConfig c;
    c.extraArguments = QStringLiteral("--lr \"0.1");
    QCOMPARE(validate(c).value(QStringLiteral("extra_arguments")), QStringLiteral("a \" quote is not closed"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLaunchConfig)
#include "tst_launch_config.moc"
