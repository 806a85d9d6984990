// Reading flight-recorder dumps into records: what only PyTorch 2.11's own files show
// (gloo's states, per-process pg_ids, the version), values no PyTorch writes said and
// never judged, and a folder of JSON and pickle dumps with another file in it.
#include <QtTest/QtTest>

#include "flight_dump_sets.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::flight_dump_sets;
namespace fs = std::filesystem;

class TestFlightRecords : public ScratchTest {
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

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightRecords)
#include "tst_flight_records.moc"
