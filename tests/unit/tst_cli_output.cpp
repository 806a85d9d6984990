// ddpscope-cli as people script it (issue 64): results as a table or sentences by default
// and as JSON with --json, the same figures either way; `compare --fail-above` as a CI
// regression gate, checked on runs whose slowdown the test made; every command's --help
// fits a screen and shows an example.
#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include "cli_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::cli_fixture;

class TestCliOutput : public CliTest {
  Q_OBJECT
  QTemporaryDir dir_;
  QString small_, large_;  // the same job at width 32 and at width 768: the second far slower

  QString train(const char* name, const char* width) {
    const QString out = dir_.filePath(name);
    const Result r = run({"train", "--iters", "12", "--batch", "64", "--width", width, "--depth", "4", "--seed", "1",
                          "--progress", "lines", "--out", out});
    if (r.code != 0) qWarning("train failed: %s", qPrintable(r.err));
    return out;
  }

  static QJsonObject json_of(const QString& text) {
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(text.toUtf8(), &error);
    return error.error == QJsonParseError::NoError ? doc.object() : QJsonObject{};
  }

 private slots:
  void initTestCase() {
    small_ = train("small.ddprun", "32");
    large_ = train("large.ddprun", "768");
    QVERIFY(QFile::exists(small_) && QFile::exists(large_));
  }

  // `stats` prints a table a person reads; `stats --json` the document, with the same
  // mean per rank.
  void testStatsIsATableByDefaultAndJsonOnRequest() {
    const Result text = run({"stats", small_});
    QVERIFY2(text.code == 0, qPrintable(text.err));
    QVERIFY2(json_of(text.out).isEmpty(), "the default output should not be JSON");
    QVERIFY2(text.out.startsWith("Run: finished, 1 rank"), qPrintable(text.out));
    QVERIFY2(text.out.contains("rank  iterations  iteration (ms)"), qPrintable(text.out));
    QVERIFY2(text.out.contains("Per rank and iteration (ms):"), qPrintable(text.out));
    const Result json = run({"stats", "--json", small_});
    QVERIFY2(json.code == 0, qPrintable(json.err));
    const QJsonObject stats = json_of(json.out);
    QVERIFY2(!stats.isEmpty(), qPrintable(json.out.left(200)));
    const QJsonObject rank0 = stats["summary"].toArray()[0].toObject();
    const QString mean = QString::number(rank0["mean_iteration_ms"].toDouble(), 'f', 2);
    const QRegularExpression row(QString(R"(\n +0 +%1 +%2 )").arg(rank0["iterations"].toInt()).arg(mean));
    QVERIFY2(text.out.contains(row), qPrintable(mean + "\n" + text.out));
    // --summary: the means without a row per iteration, in either form.
    const Result summary = run({"stats", "--summary", small_});
    QVERIFY(summary.out.contains(row) && !summary.out.contains("Per rank and iteration"));
    QVERIFY(!json_of(run({"stats", "--summary", "--json", small_}).out).contains("iterations"));
  }

  // `hang --json`: the verdict and each rank's position as data, agreeing with the text.
  void testHangJsonAgreesWithTheText() {
    QStringList dumps;
    for (int r = 0; r < 4; ++r)
      dumps << QString(DDPSCOPE_TORCH_FIXTURES "/flight_4_ranks/nccl_trace_rank_%1").arg(r);
    const Result text = run(QStringList{"hang"} + dumps);
    const Result json = run(QStringList{"hang", "--json"} + dumps);
    QVERIFY2(json.code == 0, qPrintable(json.err));
    const QJsonObject report = json_of(json.out);
    const QString verdict = report["verdict"].toString();
    QVERIFY2(!verdict.isEmpty() && text.out.startsWith(verdict), qPrintable(json.out.left(400)));
    QCOMPARE(report["culprits"].toArray().first().toInt(), 2);  // rank 2 called all_gather
    // The stacks the records of #6 keep (make_flight_dumps.py wrote them), as a capture's are
    // shown: rank 2's user frame, PyTorch's frame counted, not listed.
    QVERIFY2(text.out.contains("rank 2's call of all_gather #6 in group '0', as its flight record keeps it:\n"
                               "    train_step at train.py:61\n"
                               "    (1 frame of libraries: hang --all-frames lists them)\n"),
             qPrintable(text.out));
    QVERIFY2(text.out.contains("rank 0's call of all_reduce #6 in group '0', as its flight record keeps it:\n"
                               "    train_step at train.py:58\n"),
             qPrintable(text.out));
    const QJsonArray stacks = report["stacks"].toArray();
    QCOMPARE(stacks.size(), 4);
    const QJsonArray frames = stacks[2].toObject()["threads"].toArray()[0].toObject()["frames"].toArray();
    QCOMPARE(frames.last().toObject()["function"].toString(), QString("train_step"));
    QCOMPARE(frames.last().toObject()["line"].toInt(), 61);
    QVERIFY(frames.first().toObject()["library"].toBool());
    const Result all = run(QStringList{"hang", "--all-frames"} + dumps);
    QVERIFY2(all.out.contains("    all_gather at torch/distributed/distributed_c10d.py:2050\n"), qPrintable(all.out));
    const Result finished = run({"hang", "--json", small_});
    const QJsonObject calm = json_of(finished.out);
    QVERIFY2(calm["verdict"].isNull(), qPrintable(finished.out.left(400)));
    QCOMPARE(calm["ranks"].toArray().size(), 1);
    QCOMPARE(calm["ranks"].toArray()[0].toObject()["completed_iterations"].toInt(), 12);
  }

  // `compare A B --fail-above PCT` exits 1 when B is slower by more than PCT, and says so;
  // 0 when it is not. The slowdown is made: B's layers are 24 times as wide.
  void testCompareFailsAboveTheGate() {
    const Result slower = run({"compare", small_, large_, "--fail-above", "10"});
    QCOMPARE(slower.code, 1);
    QVERIFY2(slower.out.contains(QRegularExpression(R"(REGRESSION: B's mean iteration is [0-9.]+ ms against A's )"
                                                    R"([0-9.]+ ms \(\+[0-9.]+%\), above the --fail-above 10% gate)")),
             qPrintable(slower.out));
    const Result faster = run({"compare", large_, small_, "--fail-above", "10"});
    QCOMPARE(faster.code, 0);
    QVERIFY2(faster.out.contains("ok: B's mean iteration is") && faster.out.contains("within the --fail-above 10%"),
             qPrintable(faster.out));
    // With --json the document stays whole on stdout; the gate speaks on stderr.
    const Result json = run({"compare", small_, large_, "--fail-above", "10", "--json"});
    QCOMPARE(json.code, 1);
    QVERIFY(!json_of(json.out).isEmpty());
    QVERIFY2(json.err.contains("REGRESSION"), qPrintable(json.err));
    // No gate, no verdict: a comparison alone exits 0 however slow B is.
    QCOMPARE(run({"compare", small_, large_}).code, 0);
    QVERIFY(run({"compare", small_, large_, "--fail-above", "-3"}).code != 0);  // refused, not a gate
  }

  // Every command's --help (and the lesson subcommands') fits a full-height terminal on a
  // 1080p screen (about 60 rows) and shows one example.
  void testEveryHelpFitsAScreenWithAnExample() {
    const Result top = run({"--help"});
    QVERIFY2(top.code == 0, qPrintable(top.err));
    QStringList commands;
    bool in_list = false;
    for (const QString& line : top.out.split('\n')) {
      if (line.startsWith("SUBCOMMANDS:") || line.startsWith("Subcommands:"))
        in_list = true;
      else if (in_list && line.startsWith("  ") && !line.trimmed().isEmpty())
        commands << line.trimmed().section(' ', 0, 0);
      else if (in_list && !line.startsWith("  "))
        in_list = false;
    }
    QVERIFY2(commands.contains("stats") && commands.contains("compare") && commands.contains("collect"),
             qPrintable(top.out));
    QList<QStringList> helps = {{"--help"}};
    for (const QString& c : commands)
      helps << QStringList{c, "--help"};
    for (const char* sub : {"make", "show", "list"})
      helps << QStringList{"lesson", sub, "--help"};
    for (const QStringList& args : helps) {
      const Result help = run(args);
      QVERIFY2(help.code == 0, qPrintable(args.join(' ') + ": " + help.err));
      const int lines = help.out.trimmed().count('\n') + 1;
      QVERIFY2(lines <= 60, qPrintable(QString("%1: %2 lines\n%3").arg(args.join(' ')).arg(lines).arg(help.out)));
      QVERIFY2(help.out.contains("Example:\n  ddpscope-cli "), qPrintable(args.join(' ') + "\n" + help.out));
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCliOutput)
#include "tst_cli_output.moc"
