// Event batches: the codec round-trips a batch, and refuses malformed input with an
// error instead of reading past it.
#include <QtTest/QtTest>

#include <limits>

#include <QTemporaryDir>
#include <thread>

#include "clock_offset_estimator.h"
#include "event_batch.h"
#include "probe.h"
#include "probe_session.h"
#include "run_store_reader.h"
#include "thread_buffer.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;

namespace ddpscope::probes::testing {
int record_with_probes_compiled_out();  // compiled_out_calls.cpp
}

class TestEventBatch : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString path(const char* name) { return dir_.filePath(name); }

 private slots:

  void testBatchCodecRoundTripAndMalformedInput() {
    EventBatch b;
    b.rank = 3;
    b.sequence = 42;
    b.dropped_total = 5;
    b.clock_offset_ns = -77;
    b.threads = {{1, 1234, "compute"}};
    b.names = {"forward", "allreduce"};
    b.events.push_back(BatchEvent{10, 20, 30, 40, 50, 60, 70, 1, 8, 9, 1, 2, 0});
    b.records = {R"({"type":"metric"})"};
    const std::string bytes = encode(b);
    const EventBatch d = decode(bytes.data(), bytes.size());
    QCOMPARE(d.rank, 3);
    QCOMPARE(d.sequence, uint64_t(42));
    QCOMPARE(d.clock_offset_ns, int64_t(-77));
    QCOMPARE(d.threads.at(0).name, std::string("compute"));
    QCOMPARE(d.names.at(1), std::string("allreduce"));
    QCOMPARE(d.events.at(0).t_end_ns, int64_t(20));
    QCOMPARE(d.events.at(0).name, uint32_t(1));
    QCOMPARE(d.records.at(0), b.records[0]);
    // Every truncation is refused with a message, never read past the end.
    for (size_t n = 0; n < bytes.size(); n += 7) {
      QVERIFY_THROWS_EXCEPTION(Error, decode(bytes.data(), n));
    }
    std::string bad = bytes;
    bad[0] ^= 0x55;
    QVERIFY_THROWS_EXCEPTION(Error, decode(bad.data(), bad.size()));
    // A name index past the name table.
    EventBatch c = b;
    c.events[0].name = 7;
    const std::string cb = encode(c);
    QVERIFY_THROWS_EXCEPTION(Error, decode(cb.data(), cb.size()));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestEventBatch)
#include "tst_event_batch.moc"
