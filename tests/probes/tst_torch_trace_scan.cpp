// The first pass of a trace import, which finds each file's rank: from distributedInfo,
// from the file's name (TensorBoard's worker0, rank_1), or by hand; a subset of the ranks
// opens as those ranks, missing ranks are named as runs, and ranks past 2^31-1 are
// refused.
#include <QtTest/QtTest>

#include "torch_import_support.h"
#include "hang_analysis.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace torch_import_test;

class TestTorchTraceScan : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString list_dir_;

 private slots:

  // A subset of the ranks opens as those ranks and says which are absent.
  void testSubsetOfRanks() {
    const std::string out = (tmp_.path() + "/subset.ddprun").toStdString();
    const auto r = import_torch_traces({(kFixtures + "/kineto_cpu_gloo_2/rank1.json.gz").toStdString()}, out);
    QCOMPARE(r.ranks, std::vector<int>{1});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{0, 0}}));
    QCOMPARE(r.world_size, 2);
    RunStoreReader run(out);
    QVERIFY(QString::fromStdString(run.run().message).contains("no trace for rank 0"));
  }

  // TensorBoard's sample names (worker0, worker1) give the ranks of traces without
  // distributedInfo; a host_pid name has none, and --rank FILE=N says it by hand.
  void testRanksFromNamesAndByHand() {
    const QString dir = tmp_.path() + "/named";
    QDir().mkpath(dir);
    for (int rank = 0; rank < 2; ++rank) {
      auto trace = load_trace_object(kFixtures + QString("/kineto_cpu_gloo_2/rank%1.json.gz").arg(rank));
      trace.erase("distributedInfo");
      write_file(dir, QString("worker%1.pt.trace.json").arg(rank), QByteArray::fromStdString(trace.dump()));
    }
    const std::string out = (tmp_.path() + "/named.ddprun").toStdString();
    auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    // host_pid names: refused, saying how to give the rank; then given.
    const QString a = dir + "/node1_4242.1.pt.trace.json", b = dir + "/node2_4343.1.pt.trace.json";
    QVERIFY(QFile::rename(dir + "/worker0.pt.trace.json", a));
    QVERIFY(QFile::rename(dir + "/worker1.pt.trace.json", b));
    const QString error = import_error({a.toStdString(), b.toStdString()}, out + ".refused");
    QVERIFY2(error.contains("does not say which rank it is") && error.contains("--rank '" + a + "=N'"),
             qPrintable(error));
    TorchImportOptions options{.force = true};
    options.ranks = {{b.toStdString(), 0}, {a.toStdString(), 1}};
    r = import_torch_traces({a.toStdString(), b.toStdString()}, out, options);
    QCOMPARE(r.ranks, (std::vector<int>{0, 1}));
    RunStoreReader run(out);
    const auto config = nlohmann::json::parse(run.run().config_json);
    QCOMPARE(QString::fromStdString(config["traces"]["0"]), QFileInfo(b).absoluteFilePath());
    // --rank for a file that is not imported is a mistake, said as such.
    options.ranks = {{(dir + "/other.json").toStdString(), 3}};
    bool refused = false;
    try {
      import_torch_traces({a.toStdString(), b.toStdString()}, out, options);
    } catch (const TraceFileError& e) {
      refused = QString::fromStdString(e.message()).contains("not one of the traces to import");
    }
    QVERIFY(refused);
  }

  // Missing ranks are named as runs ("2-127"), and memory follows the files read, not the
  // world size a trace claims: a header saying 10^9 ranks imports in a few MB.
  void testMissingRanksAsRuns() {
    const QString dir = tmp_.path() + "/of128";
    QDir().mkpath(dir);
    for (int rank = 0; rank < 2; ++rank) {
      auto trace = load_trace_object(kFixtures + QString("/kineto_cpu_gloo_2/rank%1.json.gz").arg(rank));
      trace["distributedInfo"]["world_size"] = 128;
      write_file(dir, QString("rank%1.json").arg(rank), QByteArray::fromStdString(trace.dump()));
    }
    const std::string out = (tmp_.path() + "/of128.ddprun").toStdString();
    auto r = import_torch_traces({dir.toStdString()}, out, {.force = true});
    QCOMPARE(r.world_size, 128);
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{2, 127}}));
    QVERIFY(std::find(r.notes.begin(), r.notes.end(),
                      "2 of the job's 128 ranks have a trace; no trace for ranks 2-127") != r.notes.end());
    {  // The hang analysis speaks for the two ranks it holds, not for "every rank" (issue 68).
      RunStoreReader run(out);
      const HangReport hang = analyze_hang(run);
      const std::string all = hang.findings.empty() ? std::string() : hang.findings.back();
      QVERIFY2(all.rfind("the 2 ranks this run holds (of the job's 128) finished their ", 0) == 0, all.c_str());
      QVERIFY2(all.find("of the other 126 ranks it knows nothing") != std::string::npos, all.c_str());
    }
    // Rank 1 alone: a gap before it and after it.
    r = import_torch_traces({(dir + "/rank1.json").toStdString()}, out, {.force = true});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{0, 0}, {2, 127}}));
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["distributedInfo"]["world_size"] = 1000000000;
    const QString huge = write_file(tmp_.path(), "huge_world.json", QByteArray::fromStdString(trace.dump()));
    const long rss_before = peak_rss_kb();
    r = import_torch_traces({huge.toStdString()}, out, {.force = true});
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{1, 999999999}}));
    QVERIFY2(peak_rss_kb() - rss_before < 64 * 1024, qPrintable(QString::number(peak_rss_kb() - rss_before)));
    {
      RunStoreReader run(out);
      QVERIFY(run.run().config_json.size() < 100000);
    }
    // A trace of the largest int rank: the words count in 64 bits (issue 68: "no trace for ranks
    // 0-2147483646, -2147483648-2147483646").
    r = import_torch_traces({(dir + "/rank1.json").toStdString()}, out,
                            {.force = true, .ranks = {{(dir + "/rank1.json").toStdString(), 2147483647}}});
    QCOMPARE(r.world_size, 2147483647);
    QCOMPARE(r.absent, (std::vector<std::pair<int, int>>{{0, 2147483646}}));
    QVERIFY(std::find(r.notes.begin(), r.notes.end(),
                      "1 of the job's 2147483647 ranks have a trace; no trace for ranks 0-2147483646") !=
            r.notes.end());
  }

  // A rank or world size a file claims past 2^31-1 is refused, not wrapped (2^40 was
  // read as 0, 2^32+1 as 1).
  void testRanksPastIntAreRefused_data() {
    QTest::addColumn<QString>("key");
    QTest::addColumn<qint64>("value");
    QTest::newRow("rank 2^40") << QString("rank") << (qint64(1) << 40);
    QTest::newRow("rank 2^32+1") << QString("rank") << (qint64(1) << 32) + 1;
    QTest::newRow("rank -2") << QString("rank") << qint64(-2);
    QTest::newRow("world_size 2^31") << QString("world_size") << (qint64(1) << 31);
  }

  void testRanksPastIntAreRefused() {
    QFETCH(QString, key);
    QFETCH(qint64, value);
    auto trace = load_trace_object(kFixtures + "/kineto_cpu_gloo_2/rank0.json.gz");
    trace["distributedInfo"][key.toStdString()] = value;
    const QString file = write_file(tmp_.path(), "bigrank.json", QByteArray::fromStdString(trace.dump()));
    const QString error = import_error({file.toStdString()}, (tmp_.path() + "/bigrank.ddprun").toStdString());
    QVERIFY2(error.contains(QString("distributedInfo's %1 %2, outside 0..2147483647").arg(key).arg(value)) &&
                 error.contains("near byte"),
             qPrintable(error));
  }

  void testRankFromFileName_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("rank");
    QTest::newRow("rank0.json") << "rank0.json" << 0;
    QTest::newRow("rank-3") << "dir/rank-3.json.gz" << 3;
    QTest::newRow("rank_12") << "job_rank_12.json" << 12;
    QTest::newRow("tensorboard") << "rank1.1795558370312105505.pt.trace.json.gz" << 1;
    QTest::newRow("tensorboard's samples") << "worker0.pt.trace.json" << 0;
    QTest::newRow("worker_3") << "logs/worker_3.1795558370312105505.pt.trace.json.gz" << 3;
    QTest::newRow("host_pid (no rank in it)") << "node17_4242.1795558370312105505.pt.trace.json" << -1;
    QTest::newRow("more digits than a rank has") << "rank12345678901.json" << -1;
    QTest::newRow("none") << "trace.json" << -1;
  }

  void testRankFromFileName() {
    QFETCH(QString, name);
    QFETCH(int, rank);
    QCOMPARE(rank_from_file_name(name.toStdString()), rank);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTorchTraceScan)
#include "tst_torch_trace_scan.moc"
