// Flight-recorder dumps as PyTorch writes them, judged:
//  - dumps PyTorch 2.11 itself wrote (tests/probes/data/torch_2_11_flight, made by
//    tests/torch/make_real_flight_dumps.py: NCCL on an H100, gloo with 2 and 4 ranks), in
//    both forms, JSON and the pickle;
//  - dump sets written as PyTorch's writer writes them (tests/probes/make_flight_dumps.py:
//    sorted keys, compact, version 2.10, 2,000 entries, groups whose pg_id differs between
//    ranks) for every class of finding, with 2, 4 and 8 ranks, as JSON and as pickles of
//    protocols 2 and 5 (/usr/bin/python3's pickle), each verdict checked, also once
//    imported into a run file.
#include <QtTest/QtTest>

#include "flight_dump_sets.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::flight_dump_sets;
namespace fs = std::filesystem;

class TestFlightDumps : public ScratchTest {
  Q_OBJECT

  std::string sets_;  // the written dump sets

 private slots:

  void initTestCase() {
    sets_ = path("sets");
    const QString script = QStringLiteral(DDPSCOPE_SOURCE_DIR "/tests/probes/make_flight_dumps.py");
    QProcess p;
    p.start("/usr/bin/python3", {script, QString::fromStdString(sets_)});
    QVERIFY(p.waitForFinished(300000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  }

  // Dumps PyTorch 2.11 wrote: the verdicts a user of PyTorch's files must get.
  void testRealPyTorchDumps_data() {
    QTest::addColumn<QString>("set");
    QTest::addColumn<int>("cls");  // -1: every collective matched
    QTest::addColumn<QString>("culprits");
    QTest::addColumn<QString>("words");
    for (const char* form : {"json", "pickle"}) {
      const auto row = [&](const char* set, int cls, const char* culprits, const char* words) {
        QTest::addRow("%s %s", set, form) << QString("%1/%2").arg(set, form) << cls << culprits << words;
      };
      row("gloo-2-type", int(MatchClass::TypeMismatch), "1", "Rank 1 called broadcast Float[1024] ");
      row("gloo-2-missing", int(MatchClass::MissingRanks), "1", "Rank 1 never called all_reduce Float[1024] #19");
      row("gloo-4-size", int(MatchClass::SizeMismatch), "3", "Rank 3 called all_reduce Float[2048]");
      row("gloo-4-dtype", int(MatchClass::DtypeMismatch), "3", "Rank 3 called all_reduce Double[1024]");
      row("nccl-1-healthy", -1, "", "");
    }
    QTest::newRow("nccl-1-wrapped json.gz") << "nccl-1-wrapped/json" << -1 << ""
                                            << "";
  }

  void testRealPyTorchDumps() {
    QFETCH(QString, set);
    QFETCH(int, cls);
    QFETCH(QString, culprits);
    QFETCH(QString, words);
    const HangReport h = judge(DDPSCOPE_SOURCE_DIR "/tests/probes/data/torch_2_11_flight/" + set.toStdString());
    if (cls < 0) {
      QVERIFY2(h.verdict.empty(), h.verdict.c_str());
      QVERIFY(!h.findings.empty());
      return;
    }
    const GroupFinding* f = finding_of(h, "0");
    QVERIFY(f);
    QCOMPARE(int(f->cls), cls);
    QCOMPARE(f->seq, int64_t{19});
    QCOMPARE(culprits_text(h.culprits), culprits);
    QVERIFY2(QString::fromStdString(h.verdict).contains(words), h.verdict.c_str());
  }

  // Every class, as PyTorch's writer writes it, in the three forms.
  void testEveryClass_data() {
    QTest::addColumn<QString>("folder");
    for (const char* scenario : {"healthy", "type", "size", "dtype", "missing", "completed_vs_started",
                                 "started_vs_scheduled", "p2p_size", "in_flight", "missing_dump"})
      for (int world : {2, 4, 8})
        for (const char* form : {"json", "pickle2", "pickle5"})
          QTest::addRow("%s %d ranks %s", scenario, world, form)
              << QString("%1-%2/%3").arg(scenario).arg(world).arg(form);
  }

  void testEveryClass() {
    QFETCH(QString, folder);
    const std::string dir = sets_ + "/" + folder.toStdString();
    const std::string set = fs::path(dir).parent_path().string();
    std::ifstream in(set + "/expected.json");
    QVERIFY(in);
    const nlohmann::json want = nlohmann::json::parse(in);
    const std::string cls = want.at("class");
    std::vector<int> culprits = want.at("culprits").get<std::vector<int>>();
    const std::vector<std::string> files = files_in(dir);
    QVERIFY(!files.empty());
    for (const std::string& f : files)  // each a full ring of PyTorch's default size
      QVERIFY2(read_flight_dump(f).entries.size() >= 1900, f.c_str());
    const HangReport h = judge(dir);
    const std::string words = h.verdict;
    if (cls == "fully matched") {
      QVERIFY2(h.verdict.empty(), words.c_str());
      return;
    }
    if (cls == "missing dump") {
      QVERIFY2(h.verdict.empty(), words.c_str());
      QVERIFY2(QString::fromStdString(h.findings.back()).contains(QString("no dump of rank %1").arg(culprits.at(0))),
               h.findings.back().c_str());
      const std::string out = path(QString(folder).replace('/', '_').append(".ddprun").toUtf8().constData());
      const FlightImportResult r = import_flight_dumps(files, out);
      QCOMPARE(r.notes.size(), size_t(1));
      QVERIFY2(r.notes[0].find("no dump of rank " + std::to_string(culprits.at(0))) != std::string::npos,
               r.notes[0].c_str());
      return;
    }
    const std::string group = want.at("group");
    if (cls == "all in flight") {
      const GroupFinding* f = finding_of(h, group);
      QVERIFY(f);
      QCOMPARE(f->cls, MatchClass::FullyMatched);
      QVERIFY(f->pending);
      QCOMPARE(f->seq, want.at("seq").get<int64_t>());
      QVERIFY2(words.find("Every rank called all_reduce") != std::string::npos, words.c_str());
      QVERIFY2(h.culprits.empty(), culprits_text(h.culprits).toUtf8().constData());
      return;
    }
    const bool p2p = cls.rfind("p2p ", 0) == 0;
    const GroupFinding* f = finding_of(h, group, p2p);
    QVERIFY2(f, words.c_str());
    QCOMPARE(QString(match_class_name(f->cls)), QString::fromStdString(p2p ? cls.substr(4) : cls));
    QVERIFY2(!f->verdict.empty(), words.c_str());
    QCOMPARE(f->seq, want.at("seq").get<int64_t>());  // p2p: the send's p2p number
    std::vector<int> got = f->culprits;
    std::sort(got.begin(), got.end());
    std::sort(culprits.begin(), culprits.end());
    QCOMPARE(culprits_text(got), culprits_text(culprits));
  }

  // Imported into a run file, the dumps give the same verdict (the run store keeps what
  // the analysis needs: a send's two ends are in its name).
  void testAnImportedRunGivesTheSameVerdict_data() {
    QTest::addColumn<QString>("folder");
    QTest::newRow("p2p json") << "p2p_size-4/json";
    QTest::newRow("size pickle") << "size-4/pickle5";
    QTest::newRow("started vs scheduled") << "started_vs_scheduled-2/pickle2";
  }

  void testAnImportedRunGivesTheSameVerdict() {
    QFETCH(QString, folder);
    const std::string dir = sets_ + "/" + folder.toStdString();
    const std::string run = path(QString(folder).replace('/', '_').append(".ddprun").toUtf8().constData());
    import_flight_dumps(flight_dump_inputs({dir}), run);
    RunStoreReader reader(run);
    const HangReport from_run = analyze_hang(reader);
    const HangReport from_dumps = judge(dir);
    QVERIFY(!from_dumps.verdict.empty());
    QCOMPARE(QString::fromStdString(from_run.verdict), QString::fromStdString(from_dumps.verdict));
  }

  // PyTorch's dumps do not say when they were taken: a run imported from them says a rank
  // waits, not for how long ("since 0 ms" measured the wait against its own start), and
  // a rank without iterations is not "in iteration -1".
  void testAnImportedRunDoesNotMakeUpWaits() {
    const std::string dir = DDPSCOPE_SOURCE_DIR "/tests/probes/data/torch_2_11_flight/gloo-4-size/json";
    const std::string run = path("ages.ddprun");
    import_flight_dumps(flight_dump_inputs({dir}), run);
    RunStoreReader reader(run);
    const HangReport h = analyze_hang(reader);
    QVERIFY(!h.ages_known);
    int waits = 0;
    for (const std::string& f : h.findings) {
      QVERIFY2(f.find("since 0 ms") == std::string::npos && f.find("iteration -1") == std::string::npos, f.c_str());
      waits += f.find("the dumps do not say for how long") != std::string::npos;
    }
    QVERIFY(waits >= 1);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightDumps)
#include "tst_flight_dumps.moc"
