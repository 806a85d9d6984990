// The flight recorder: the ring buffer and its eviction, records streamed into a real run
// file while a session ships, the dump file in PyTorch's JSON form read back field by
// field, a dump merged into the run file (a later state winning over an earlier copy),
// a dump still beside the run file folded in on read, and clear errors for files that
// are not dumps.
#include <QtTest/QtTest>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "flight_recorder.h"
#include "flight_records.h"
#include "probe_session.h"
#include "run_store_reader.h"
#include "run_store_schema.h"
#include "run_store_writer.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

TensorsSummary floats(std::initializer_list<int64_t> dims, int count = 1) {
  TensorsSummary t;
  t.count = count;
  t.ndim = static_cast<int32_t>(dims.size());
  int d = 0;
  t.total_numel = count;
  for (int64_t v : dims) {
    t.dims[d++] = v;
    t.total_numel *= v;
  }
  t.dtype = "float32";
  return t;
}

CollectiveRecord allreduce(int64_t seq, int64_t n) {
  CollectiveRecord r;
  r.collective_seq = seq;
  r.op = "allreduce";
  r.input = floats({n});
  r.timeout_ms = 30000;
  return r;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

}  // namespace

class TestFlightRecorder : public ScratchTest {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // Every recorder of this process keeps 4 records: eviction is seen after 5.
    setenv("DDPSCOPE_FR_BUFFER_SIZE", "4", 1);
  }

  void testRingKeepsTheNewestRecordsInOrder() {
    FlightRecorder& fr = FlightRecorder::create({.name = "ring", .desc = "test", .ranks = {0, 1}});
    QVERIFY(fr.on());
    std::vector<int64_t> ids;
    for (int i = 0; i < 6; ++i)
      ids.push_back(fr.schedule(allreduce(i, 16)));
    QCOMPARE(ids.back(), int64_t(5));
    fr.start(ids[5]);
    fr.complete(ids[4]);
    fr.start(ids[0]);  // evicted: ignored
    const auto records = fr.records();
    QCOMPARE(records.size(), size_t(4));
    QCOMPARE(records.front().record_id, int64_t(2));
    QCOMPARE(records.back().collective_seq, int64_t(5));
    QCOMPARE(records[3].state, CollectiveState::Started);
    QCOMPARE(records[2].state, CollectiveState::Completed);
    QVERIFY(records[2].t_completed_ns >= records[2].t_started_ns);
    QVERIFY(records[2].t_started_ns >= records[2].t_created_ns);
    QCOMPARE(records[0].state, CollectiveState::Scheduled);
  }

  void testRecordsStreamIntoTheRunFileWithTheirLatestState() {
    const std::string file = path("stream.ddprun");
    {
      ProbeSession session({.rank = 0, .run_file = file, .run = {.world_size = 2}});
      FlightRecorder& fr = FlightRecorder::create({.name = "stream", .desc = "ddp", .ranks = {0, 1}});
      set_phase("backward");
      const int64_t a = fr.schedule(allreduce(0, 1024));
      fr.start(a);
      fr.complete(a);
      session.flush();
      CollectiveRecord send;
      send.p2p_seq = 0;
      send.op = "send";
      send.peer = 1;
      send.input = floats({3, 4});
      const int64_t b = fr.schedule(send);
      fr.start(b);
      set_phase("");
    }
    RunStoreReader run(file);
    QCOMPARE(run.run().schema, kRunStoreSchemaVersion);
    const FlightData data = run.flight();
    std::vector<CollectiveRow> mine;
    for (const CollectiveRow& r : data.by_rank.at(0))
      if (r.pg_name == "stream") mine.push_back(r);
    QCOMPARE(mine.size(), size_t(2));
    QCOMPARE(mine[0].op, std::string("allreduce"));
    QCOMPARE(mine[0].state, std::string("completed"));
    QCOMPARE(mine[0].phase, std::string("backward"));
    QCOMPARE(mine[0].collective_seq, int64_t(0));
    QCOMPARE(mine[0].input_sizes, std::vector<std::vector<int64_t>>{{1024}});
    QCOMPARE(mine[0].input_dtypes, std::vector<std::string>{"float32"});
    QCOMPARE(mine[0].timeout_ms, int64_t(30000));
    QVERIFY(mine[0].t_completed_ns >= mine[0].t_started_ns && mine[0].t_started_ns > 0);
    QVERIFY(mine[1].is_p2p());
    QCOMPARE(mine[1].op, std::string("send"));
    QCOMPARE(mine[1].profiling_name, std::string("ddpscope:send 0->1"));
    QCOMPARE(mine[1].state, std::string("started"));
    QCOMPARE(mine[1].t_completed_ns, int64_t(0));
    const auto group =
        std::find_if(data.groups.begin(), data.groups.end(), [](const GroupRow& g) { return g.name == "stream"; });
    QVERIFY(group != data.groups.end());
    QCOMPARE(group->desc, std::string("ddp"));
    QCOMPARE(group->ranks, (std::vector<int>{0, 1}));
  }

  void testDumpFileHasPyTorchsFieldsAndReadsBack() {
    FlightRecorder& fr = FlightRecorder::create({.name = "dumped", .desc = "sub \"group\"", .ranks = {2, 5}});
    CollectiveRecord r = allreduce(7, 8);
    r.input = floats({8, 2}, 3);
    r.input.same_shape = false;
    r.input.total_numel = 40;
    const int64_t id = fr.schedule(r);
    fr.start(id);
    const std::string dump = path("run.ddprun.fr_rank_5.json");
    FlightRecorder::set_dump_path(dump, 5);
    QCOMPARE(FlightRecorder::dump_all("timeout: test"), dump);
    QVERIFY(!QFile::exists(QString::fromStdString(dump + ".part")));

    std::ifstream in(dump);
    const nlohmann::json doc = nlohmann::json::parse(in);
    QCOMPARE(doc["version"].get<std::string>(), std::string("2.4"));
    QCOMPARE(doc["rank"].get<int>(), 5);
    QCOMPARE(doc["pg_config"]["dumped"]["ranks"], nlohmann::json::array({2, 5}));
    const auto entry = std::find_if(doc["entries"].begin(), doc["entries"].end(),
                                    [](const nlohmann::json& e) { return e["process_group"][0] == "dumped"; });
    QVERIFY(entry != doc["entries"].end());
    for (const char* field :
         {"record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name",
          "input_sizes", "output_sizes", "input_dtypes", "output_dtypes", "state", "time_created_ns",
          "time_discovered_started_ns", "time_discovered_completed_ns", "duration_ms", "timeout_ms", "frames"})
      QVERIFY2(entry->contains(field), field);
    QCOMPARE((*entry)["state"].get<std::string>(), std::string("started"));
    QVERIFY((*entry)["time_discovered_completed_ns"].is_null());
    QCOMPARE((*entry)["input_sizes"], nlohmann::json::parse("[[8,2],[],[]]"));
    QCOMPARE((*entry)["input_numel"].get<int>(), 40);

    const FlightDump back = read_flight_dump(dump);
    QCOMPARE(back.rank, 5);
    QCOMPARE(back.producer, std::string("ddpscope"));
    QCOMPARE(back.reason, std::string("timeout: test"));
    QVERIFY(looks_like_flight_dump(dump));
    const auto row = std::find_if(back.entries.begin(), back.entries.end(),
                                  [](const CollectiveRow& e) { return e.pg_name == "dumped"; });
    QVERIFY(row != back.entries.end());
    QCOMPARE(row->pg_desc, std::string("sub \"group\""));
    QCOMPARE(row->collective_seq, int64_t(7));
    QCOMPARE(row->rank, 5);
    FlightRecorder::set_dump_path("", 0);
  }

  void testDumpMergesIntoTheRunFileLaterStateWins() {
    const std::string file = path("merge.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({.world_size = 2});
      FlightDump d;
      d.rank = 1;
      d.path = "first";
      d.groups = {{1, 0, "0", "default", {0, 1}}};
      CollectiveRow r;
      r.rank = 1;
      r.pg_name = "0";
      r.collective_seq = 3;
      r.op = "all_reduce";
      r.state = "completed";
      r.t_created_ns = 10, r.t_started_ns = 20, r.t_completed_ns = 30;
      d.entries = {r};
      w.store_flight_dump(d, "dump", true);
      // An older copy of the same record (a stream batch that arrived late) does not undo it.
      d.entries[0].state = "scheduled";
      d.entries[0].t_started_ns = 0, d.entries[0].t_completed_ns = 0;
      d.path = "second";
      w.store_flight_dump(d, "dump", true);
    }
    RunStoreReader run(file);
    const FlightData data = run.flight();
    QCOMPARE(data.by_rank.at(1).size(), size_t(1));
    QCOMPARE(data.by_rank.at(1)[0].state, std::string("completed"));
    QCOMPARE(data.by_rank.at(1)[0].t_completed_ns, int64_t(30));
    QCOMPARE(data.dumps.size(), size_t(2));
    QCOMPARE(data.world_size, 2);
  }

  void testDumpBesideTheRunFileIsFoldedInOnRead() {
    const std::string file = path("beside.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({.world_size = 2});
    }
    write_text(flight_dump_path(file, 1),
               R"({"version":"2.4","pg_config":{"0":{"name":"0","desc":"default_pg","ranks":"[0, 1]"}},)"
               R"("entries":[{"record_id":0,"pg_id":0,"process_group":["0","default_pg"],"collective_seq_id":1,)"
               R"("p2p_seq_id":0,"op_id":1,"profiling_name":"nccl:all_reduce","input_sizes":[[4]],)"
               R"("output_sizes":[[4]],"input_dtypes":["Float"],"output_dtypes":["Float"],"state":"started",)"
               R"("time_created_ns":5,"time_discovered_started_ns":6,"time_discovered_completed_ns":null,)"
               R"("timeout_ms":600000,"frames":[{"name":"forward","filename":"train.py","line":42}]}]})");
    RunStoreReader run(file);
    const FlightData data = run.flight();
    QCOMPARE(data.by_rank.count(1), size_t(1));
    const CollectiveRow& r = data.by_rank.at(1)[0];
    QCOMPARE(r.op, std::string("all_reduce"));
    QCOMPARE(r.state, std::string("started"));
    QCOMPARE(r.frames.size(), size_t(1));
    QCOMPARE(r.frames[0].file, std::string("train.py"));
    QCOMPARE(data.groups.at(0).ranks, (std::vector<int>{0, 1}));
    QCOMPARE(data.dumps.size(), size_t(1));
  }

  void testNotADumpGetsAClearError_data() {
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("expected");
    QTest::newRow("truncated pickle") << QByteArray("\x80\x04\x95", 3) << "truncated";
    QTest::newRow("not json") << QByteArray("hello") << "neither JSON nor a pickle";
    QTest::newRow("other json") << QByteArray(R"({"hello":1})") << "none of a dump's keys";
    QTest::newRow("profiler trace") << QByteArray(R"({"schemaVersion":1,"traceEvents":[]})") << "profiler trace";
    QTest::newRow("bad entry") << QByteArray(R"({"version":"2.10","entries":[{"record_id":"x1"}]})") << "entry 0";
    QTest::newRow("unknown major") << QByteArray(R"({"version":"3.0","entries":[]})") << "versions 1.x and 2.x";
    QTest::newRow("not a version") << QByteArray(R"({"version":"abc"})") << "not major.minor";
  }
  void testNotADumpGetsAClearError() {
    QFETCH(QByteArray, content);
    QFETCH(QString, expected);
    const std::string file = path("nccl_trace_rank_3");
    write_text(file, content.toStdString());
    try {
      read_flight_dump(file);
      QFAIL("read a file that is not a dump");
    } catch (const RunStoreError& e) {
      const QString what = e.what();
      QVERIFY2(what.contains(expected) && what.contains("nccl_trace_rank_3"), qPrintable(what));
    }
  }

  // PyTorch leaves "entries" out when the ring is empty: still a dump.
  void testADumpWithNoEntriesReads() {
    const std::string file = path("nccl_trace_rank_2");
    write_text(file, R"({"comm_lib_version":"2.28.9","pg_config":{},"pg_status":{},"version":"2.10"})");
    const FlightDump d = read_flight_dump(file);
    QCOMPARE(d.rank, 2);
    QVERIFY(d.entries.empty());
    QCOMPARE(d.version_minor, 10);
  }

  void testRankComesFromTheFileNameWhenNotInIt() {
    const std::string file = path("nccl_trace_rank_12");
    write_text(file, R"({"version":"2.4","entries":[]})");
    QCOMPARE(read_flight_dump(file).rank, 12);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightRecorder)
#include "tst_flight_recorder.moc"
