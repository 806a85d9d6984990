// Flight-recorder dumps as PyTorch writes them, read and judged:
//  - dumps PyTorch 2.11 itself wrote (tests/probes/data/torch_2_11_flight, made by
//    tests/torch/make_real_flight_dumps.py: NCCL on an H100, gloo with 2 and 4 ranks), in
//    both forms, JSON and the pickle;
//  - dump sets written as PyTorch's writer writes them (tests/probes/make_flight_dumps.py:
//    sorted keys, compact, version 2.10, 2,000 entries, groups whose pg_id differs between
//    ranks) for every class of finding, with 2, 4 and 8 ranks, as JSON and as pickles of
//    protocols 2 and 5 (/usr/bin/python3's pickle), each verdict checked;
//  - hostile pickles refused; folders of mixed dumps.
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "flight_analysis.h"
#include "flight_import.h"
#include "hang_analysis.h"
#include "pickle_reader.h"
#include "run_store_reader.h"
#include "scratch_test.h"
#include "sqlite_db.h"

using namespace ddpscope::probes;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder))
    out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

const GroupFinding* finding_of(const HangReport& h, const std::string& group, bool p2p = false) {
  for (const GroupFinding& g : h.flight.groups)
    if (g.group == group && g.p2p == p2p) return &g;
  return nullptr;
}

QString culprits_text(const std::vector<int>& c) {
  QStringList s;
  for (int r : c)
    s << QString::number(r);
  return s.join(',');
}

}  // namespace

class TestFlightDumps : public ScratchTest {
  Q_OBJECT

  std::string sets_;  // the written dump sets

  // The verdict from a folder, as `ddpscope-cli hang FOLDER` draws it.
  static HangReport judge(const std::string& folder) {
    return analyze_hang(read_flight_dumps(flight_dump_inputs({folder})));
  }

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

  // What only the real files show: gloo's states, per-process pg_ids, the version.
  void testRealDumpsAsRead() {
    const std::string dir = DDPSCOPE_SOURCE_DIR "/tests/probes/data/torch_2_11_flight/";
    const FlightDump nccl = read_flight_dump(dir + "nccl-1-healthy/json/rank_0.json");
    QCOMPARE(nccl.version, std::string("2.10"));
    QCOMPARE(nccl.version_minor, 10);
    QCOMPARE(nccl.comm_lib_version, std::string("2.28.9"));
    QVERIFY(nccl.states_tracked);
    QCOMPARE(nccl.groups.size(), size_t(4));
    QCOMPARE(nccl.entries.size(), size_t(45));
    const FlightDump pickled = read_flight_dump(dir + "nccl-1-healthy/pickle/rank_0");
    QCOMPARE(pickled.form, std::string("pickle"));
    QCOMPARE(pickled.entries.size(), nccl.entries.size());
    for (size_t k = 0; k < nccl.entries.size(); ++k) {
      QCOMPARE(pickled.entries[k].op, nccl.entries[k].op);
      QCOMPARE(pickled.entries[k].collective_seq, nccl.entries[k].collective_seq);
      QCOMPARE(pickled.entries[k].output_sizes, nccl.entries[k].output_sizes);
    }
    QVERIFY(!pickled.entries[0].frames.empty());  // only the pickle has stacks
    QVERIFY(nccl.entries[0].frames.empty());
    // gloo: no start or end is tracked; retired entries count as completed.
    const FlightDump gloo = read_flight_dump(dir + "gloo-2-missing/json/rank_0.json");
    QVERIFY(!gloo.states_tracked);
    QVERIFY(gloo.groups.empty());  // gloo writes one nameless group with no ranks
    QCOMPARE(gloo.entries.front().state, std::string("completed"));
    QCOMPARE(gloo.entries.back().state, std::string("scheduled"));  // the call rank 1 never made
    // group "2" has pg_id 2 on rank 0 and pg_id 1 on rank 1: matched by name.
    const FlightDump g0 = read_flight_dump(dir + "gloo-2-type/json/rank_0.json");
    const FlightDump g1 = read_flight_dump(dir + "gloo-2-type/json/rank_1.json");
    const auto pg_of = [](const FlightDump& d, const std::string& name) {
      for (const CollectiveRow& r : d.entries)
        if (r.pg_name == name) return r.pg_id;
      return int64_t{-1};
    };
    QVERIFY(pg_of(g0, "2") != pg_of(g1, "2"));
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

  // A value no PyTorch writes is said, never judged.
  void testUnknownValuesAreNotJudged() {
    const std::string dir = path("unknown");
    fs::create_directories(dir);
    for (int r = 0; r < 2; ++r) {
      nlohmann::json entry = {{"collective_seq_id", 1},
                              {"input_dtypes", {r == 1 ? "zz" : "Float"}},
                              {"input_sizes", {{1}}},
                              {"output_dtypes", {"Float"}},
                              {"output_sizes", {{2}}},
                              {"p2p_seq_id", 0},
                              {"pg_id", 0},
                              {"process_group", {"0", "default_pg"}},
                              {"profiling_name", "nccl:all_gather"},
                              {"record_id", 0},
                              {"state", "started"},
                              {"time_created_ns", 5},
                              {"time_discovered_completed_ns", 0},
                              {"time_discovered_started_ns", 6}};
      nlohmann::json dump = {{"entries", {entry}},
                             {"pg_config", {{"0", {{"desc", "default_pg"}, {"name", "0"}, {"ranks", "[0, 1]"}}}}},
                             {"version", "2.10"}};
      std::ofstream(dir + "/nccl_trace_rank_" + std::to_string(r)) << dump.dump();
    }
    const HangReport h = judge(dir);
    QVERIFY(h.culprits.empty());
    QVERIFY2(
        h.verdict.find("unknown values") != std::string::npos && h.verdict.find("dtype \"zz\"") != std::string::npos,
        h.verdict.c_str());
  }

  // Pickles that ask for code, or that are damaged or deep, are refused with what was wrong.
  void testHostilePicklesAreRefused_data() {
    QTest::addColumn<QString>("code");
    QTest::addColumn<QString>("words");
    QTest::newRow("global") << "import os, pickle; sys_out(pickle.dumps(os.system, protocol=2))"
                            << "GLOBAL";
    QTest::newRow("stack global") << "import os, pickle; sys_out(pickle.dumps(os.system, protocol=5))"
                                  << "STACK_GLOBAL";
    QTest::newRow("reduce") << "import pickle\nclass E:\n  def __reduce__(self): return (print, ('hi',))\n"
                               "sys_out(pickle.dumps({'entries': [E()]}, protocol=2))"
                            << "the pickle asks for";
    QTest::newRow("instance") << "import pickle, collections\nsys_out(pickle.dumps(collections.OrderedDict(a=1), "
                                 "protocol=2))"
                              << "the pickle asks for";
    QTest::newRow("set") << "import pickle; sys_out(pickle.dumps({'entries': {1, 2}}, protocol=4))"
                         << "a set";
    QTest::newRow("truncated") << "import pickle; sys_out(pickle.dumps({'version': '2.10', 'entries': [{'a': 1}] * "
                                  "50}, protocol=2)[:-30])"
                               << "truncated";
    QTest::newRow("deep") << "import pickle\nx = []\nfor _ in range(400): x = [x]\n"
                             "sys_out(pickle.dumps({'version': '2.10', 'entries': x}, protocol=2))"
                          << "deeper than";
    QTest::newRow("huge string") << "sys_out(b'\\x80\\x02X\\xff\\xff\\xff\\x7fabc')"
                                 << "past the end of the file";
    // The same entry again after Python's batch of 1,000 appends: it was streamed and
    // forgotten, so the reference back is refused (within a batch it is simply read twice).
    QTest::newRow("an entry referenced again")
        << "import pickle\n"
           "es = [{'profiling_name': 'nccl:all_reduce', 'collective_seq_id': i} "
           "for i in range(1001)]\nes.append(es[0])\n"
           "sys_out(pickle.dumps({'version': '2.10', 'entries': es}, protocol=2))"
        << "refers back to an item";
    // Issue 49: memory follows what a dump expands to. A pickle's shared references are
    // replayed once per use: 2,000 entries sharing one list of 5,000 frames are 10^7
    // frames from 300 KB. A gzip of the same entry a million times, likewise.
    QTest::newRow("shared references")
        << "import pickle\nfr = [{'name': 'f' * 100, 'filename': 'g' * 100, 'line': 1}] * 5000\n"
           "es = [{'profiling_name': 'nccl:all_reduce', 'collective_seq_id': i, 'frames': fr} for i in range(2000)]\n"
           "sys_out(pickle.dumps({'version': '2.10', 'entries': es}, protocol=4))"
        << "expands to more than";
    QTest::newRow("gzip")
        << "import gzip\ne = b'{\"profiling_name\":\"nccl:all_reduce\",\"collective_seq_id\":1,\"frames\":[]},'\n"
           "sys_out(gzip.compress(b'{\"version\":\"2.10\",\"entries\":[' + e * 1000000 + b'{}]}'))"
        << "expands to more than";
    // RapidJSON recurses a level per bracket: 100,000 of them in 310 bytes of gzip.
    QTest::newRow("deep JSON")
        << "import gzip\nsys_out(gzip.compress(b'{\"version\":\"2.4\",\"pg_config\":{},\"junk\":' + b'[' * 100000 + "
           "b']' * 100000 + b'}'))"
        << "nests deeper than 200 levels";
    QTest::newRow("big int") << "import pickle; sys_out(pickle.dumps({'version': '2.10', 'entries': [{'record_id': "
                                "2**80}]}, protocol=2))"
                             << "wider than 64 bits";
  }
  void testHostilePicklesAreRefused() {
    QFETCH(QString, code);
    QFETCH(QString, words);
    const QString file = scratch_file("hostile_rank_0");
    QProcess p;
    p.start("/usr/bin/python3", {"-c", "import sys\ndef sys_out(b): open(sys.argv[1], 'wb').write(b)\n" + code, file});
    QVERIFY(p.waitForFinished(30000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    try {
      read_flight_dump(file.toStdString());
      QFAIL("a hostile pickle was read");
    } catch (const RunStoreError& e) {
      QVERIFY2(QString(e.what()).contains(words) && QString(e.what()).contains("hostile_rank_0"), e.what());
    }
  }

  // A folder of JSON and pickle dumps with another file in it: the dumps are taken, the
  // other file is named with why.
  void testAFolderOfMixedForms() {
    const std::string dir = path("mixed");
    fs::create_directories(dir);
    const std::string set = sets_ + "/size-4/";
    fs::copy_file(set + "json/nccl_trace_rank_0", dir + "/nccl_trace_rank_0.json");
    fs::copy_file(set + "pickle2/nccl_trace_rank_1", dir + "/nccl_trace_rank_1");
    fs::copy_file(set + "pickle5/nccl_trace_rank_2", dir + "/nccl_trace_rank_2.pkl");
    fs::copy_file(set + "json/nccl_trace_rank_3", dir + "/nccl_trace_rank_3.json");
    std::ofstream(dir + "/notes.txt") << "the job hung at step 9\n";
    std::vector<std::string> skipped;
    const std::vector<std::string> dumps = flight_dump_inputs({dir}, &skipped);
    QCOMPARE(dumps.size(), size_t(4));
    QCOMPARE(skipped.size(), size_t(1));
    QVERIFY2(skipped[0].find("notes.txt: it is neither JSON nor a pickle") == 0, skipped[0].c_str());
    const HangReport h = judge(dir);
    QCOMPARE(culprits_text(h.culprits), QString("3"));
    // A folder with no dump says what it holds.
    const std::string empty = path("nodumps");
    fs::create_directories(empty);
    std::ofstream(empty + "/trace.json") << R"({"schemaVersion":1,"traceEvents":[]})";
    try {
      flight_dump_inputs({empty});
      QFAIL("a folder without dumps was taken");
    } catch (const RunStoreError& e) {
      QVERIFY2(
          QString(e.what()).contains("holds no flight-recorder dump") && QString(e.what()).contains("profiler trace"),
          e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestFlightDumps)
#include "tst_flight_dumps.moc"
