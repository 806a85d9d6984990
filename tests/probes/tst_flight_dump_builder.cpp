// Building a flight-recorder dump from its JSON as it is read (no whole tree in memory):
// what is not a dump is named for what it is (a profiler trace, a list, a single value,
// two documents), an entry of the wrong shape is named by its index, keys of the wrong
// type are refused, and nesting past the bound is refused before it costs anything.
#include <QtTest/QtTest>

#include <fstream>

#include "flight_records.h"
#include "sqlite_db.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

// One entry as PyTorch writes it.
const std::string kEntry =
    R"({"record_id": 0, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": 1,)"
    R"( "p2p_seq_id": 0, "profiling_name": "nccl:all_reduce", "state": "completed", "time_created_ns": 5})";

}  // namespace

class TestFlightDumpBuilder : public ScratchTest {
  Q_OBJECT

  QString readDump(const char* name, const std::string& text) {
    const std::string file = path(name);
    std::ofstream(file) << text;
    try {
      const FlightDump d = read_flight_dump(file, 0);
      return QString("read %1 entries").arg(d.entries.size());
    } catch (const RunStoreError& e) {
      return QString::fromStdString(e.message());
    }
  }

 private slots:
  void testWhatIsNotADumpIsNamed() {
    QVERIFY(readDump("trace_rank_0", R"({"traceEvents": []})").contains("it is a PyTorch profiler trace"));
    QVERIFY(readDump("list_rank_0", "[1, 2]").contains("it is a JSON list, not an object"));
    const QString value = readDump("value_rank_0", "42");
    QVERIFY2(value.contains("not a flight-recorder dump"), qPrintable(value));
    QVERIFY(readDump("two_rank_0", R"({"version": "2.10", "entries": []} {"version": "2.10"})")
                .contains("more than one document"));
  }

  void testEntriesOfTheWrongShapeAreNamed() {
    QVERIFY2(readDump("entries_rank_0", R"({"version": "2.10", "entries": {}})").contains("\"entries\" must be a list"),
             qPrintable(readDump("entries_rank_0", R"({"version": "2.10", "entries": {}})")));
    const QString second = readDump("entry_rank_0", R"({"version": "2.10", "entries": [)" + kEntry + R"(, [1]]})");
    QVERIFY2(second.contains("entry 1 is a list, not an object"), qPrintable(second));
    const QString text = readDump("text_rank_0", R"({"version": "2.10", "entries": ["x"]})");
    QVERIFY2(text.contains("entry 0 is text, not an object"), qPrintable(text));
  }

  void testAWellFormedDumpIsRead() {
    const QString ok =
        readDump("ok_rank_0", R"({"version": "2.10", "pg_config": {"0": {"name": "0", "desc": "default_pg",)"
                              R"( "ranks": "[0, 1]"}}, "entries": [{"record_id": 0, "pg_id": 0,)"
                              R"( "process_group": ["0", "default_pg"], "collective_seq_id": 1,)"
                              R"( "p2p_seq_id": 0, "profiling_name": "nccl:all_reduce",)"
                              R"( "state": "completed", "time_created_ns": 5}]})");
    QCOMPARE(ok, QString("read 1 entries"));
  }

  void testDeepNestingIsRefused() {
    // Inside a key no reader knows (skipped, not stored): the bound still holds.
    std::string deep = R"({"version": "2.10", "extra": )";
    for (int i = 0; i < 5000; ++i)
      deep += "[";
    const QString why = readDump("deep_rank_0", deep);
    QVERIFY2(why.contains("nests deeper than 200 levels"), qPrintable(why));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightDumpBuilder)
#include "tst_flight_dump_builder.moc"
