// A span's record for the Details panel: every column its row sets, by the run file's
// names (unset ones left out), every argument its trace gave it in the trace's order, and
// an error in words, never an exception, for a span or a file that is not there.
#include <QtTest/QtTest>

#include "run_store_reader.h"
#include "run_store_writer.h"
#include "scratch_test.h"
#include "span_record.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;
using probes::BatchEvent;
using probes::Kind;

namespace {

std::string field(const SpanRecord& r, const std::string& name) {
  for (const auto& [k, v] : r.fields)
    if (k == name) return v;
  return "(unset)";
}

}  // namespace

class TestSpanRecord : public ScratchTest {
  Q_OBJECT
  std::string m_file;
  std::vector<int64_t> m_ids;

 private slots:
  void initTestCase() {
    m_file = path("args.ddprun");
    probes::RunStoreWriter w(m_file);
    w.begin_run({"{}", 1, "gloo", "torch: Net"});
    probes::EventBatch b;
    b.rank = 0;
    b.threads = {{0, 100, "compute"}};
    b.names = {"ampere_sgemm_128x64_nn", "aten::mm"};
    b.events = {BatchEvent{1000, 5000, 4096, 7, -1, 2, -1, 0, 3, -1, 0, static_cast<uint8_t>(Kind::Allreduce), 0},
                BatchEvent{6000, 9000, -1, -1, -1, 2, -1, 1, -1, -1, 0, static_cast<uint8_t>(Kind::Forward), 0}};
    b.args = {{0, R"({"grid":[1,2,3],"stream":7,"name":"k"})"}};
    w.write(b);
    w.end_run("finished", "", 0);
    probes::RunStoreReader r(m_file);
    r.for_each_span([&](const probes::CompactSpan& s) { m_ids.push_back(s.rowid); });
    QCOMPARE(m_ids.size(), size_t{2});
  }

  void testEverySetColumnByItsName() {
    const SpanRecord r = readSpanRecord(m_file, m_ids[0]);
    QVERIFY2(r.error.empty(), r.error.c_str());
    QCOMPARE(field(r, "kind"), std::string(probes::kind_name(Kind::Allreduce)));
    QCOMPARE(field(r, "name"), std::string("ampere_sgemm_128x64_nn"));
    QCOMPARE(field(r, "rank"), std::string("0"));
    QCOMPARE(field(r, "t_begin_ns"), std::string("1000"));
    QCOMPARE(field(r, "t_end_ns"), std::string("5000"));
    QCOMPARE(field(r, "iteration"), std::string("2"));
    QCOMPARE(field(r, "bucket"), std::string("3"));
    QCOMPARE(field(r, "bytes"), std::string("4096"));
    QCOMPARE(field(r, "seq"), std::string("7"));
    QCOMPARE(field(r, "peer"), std::string("(unset)"));  // -1: not set, not listed
    const SpanRecord plain = readSpanRecord(m_file, m_ids[1]);
    QCOMPARE(field(plain, "bucket"), std::string("(unset)"));
    QCOMPARE(field(plain, "name"), std::string("aten::mm"));
  }

  void testArgumentsInTheTracesOrder() {
    const SpanRecord r = readSpanRecord(m_file, m_ids[0]);
    QCOMPARE(r.arguments.size(), size_t{3});
    QCOMPARE(r.arguments[0], (std::pair<std::string, std::string>{"grid", "[1,2,3]"}));
    QCOMPARE(r.arguments[1], (std::pair<std::string, std::string>{"stream", "7"}));
    QCOMPARE(r.arguments[2], (std::pair<std::string, std::string>{"name", "k"}));  // a string as is
    QVERIFY(readSpanRecord(m_file, m_ids[1]).arguments.empty());
  }

  void testWhatIsNotThereIsSaid() {
    const SpanRecord none = readSpanRecord(m_file, 987654);
    QCOMPARE(none.error, std::string("the run file holds no span 987654"));
    const SpanRecord gone = readSpanRecord(path("missing.ddprun"), 1);
    QVERIFY(!gone.error.empty());
    QVERIFY2(gone.error.find("missing.ddprun") != std::string::npos, gone.error.c_str());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSpanRecord)
#include "tst_span_record.moc"
