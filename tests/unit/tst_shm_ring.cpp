// The shared-memory ring alone, in one process's memory: bytes come out as they went in,
// across the ring's end and in parts; a full ring takes nothing more until read; the
// sleep and room flags say when to wake the other side, and not otherwise; a region that
// is not a ring is refused by name; indices a broken peer wrote are caught, never
// followed.
#include <QtTest/QtTest>

#include <cstring>
#include <string>
#include <vector>

#include "ddpscope/error.h"
#include "rpc/shm_ring.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;

namespace {

struct Region {
  std::vector<uint64_t> words;  // 8-byte aligned, zeroed
  explicit Region(size_t capacity) : words(ShmRing::region_bytes(capacity) / 8 + 1) {
    ShmRing::format(words.data(), capacity);
  }
  void* base() { return words.data(); }
  size_t bytes() const { return words.size() * 8; }
};

std::vector<iovec> piecesOf(std::vector<std::string>& parts) {
  std::vector<iovec> v;
  for (auto& p : parts)
    v.push_back({p.data(), p.size()});
  return v;
}

std::string readAll(ShmRing& ring) {
  std::string out(ring.readable(), '\0');
  out.resize(ring.read(reinterpret_cast<uint8_t*>(out.data()), out.size()));
  return out;
}

}  // namespace

class TestShmRing : public QObject {
  Q_OBJECT

 private slots:
  void testBytesComeOutAsTheyWentInAcrossTheEnd() {
    Region r(256);
    ShmRing writer(r.base(), r.bytes()), reader(r.base(), r.bytes());
    std::string sent, got;
    for (int round = 0; round < 40; ++round) {  // 40 x ~100 bytes through 256: wraps many times
      std::vector<std::string> parts = {"head" + std::to_string(round), std::string(37 + round, char('a' + round % 26)),
                                        "", std::string(50, 'z')};
      std::vector<iovec> pieces = piecesOf(parts);
      size_t total = 0;
      for (auto& p : parts)
        total += p.size();
      QCOMPARE(writer.write_some(pieces), static_cast<ssize_t>(total));
      for (auto& p : parts)
        sent += p;
      got += readAll(reader);
    }
    QCOMPARE(got, sent);
    QVERIFY(!reader.broken());
  }

  void testAFullRingTakesWhatFitsAndTheRestAfterARead() {
    Region r(128);
    ShmRing writer(r.base(), r.bytes()), reader(r.base(), r.bytes());
    std::vector<std::string> parts = {std::string(100, 'x'), std::string(100, 'y')};
    std::vector<iovec> pieces = piecesOf(parts);
    QCOMPARE(writer.write_some(pieces), ssize_t{128});
    QCOMPARE(pieces[0].iov_len, size_t{0});  // written, as writev would leave it
    QCOMPARE(pieces[1].iov_len, size_t{72});
    QCOMPARE(writer.room(), size_t{0});
    QCOMPARE(writer.write_some(pieces), ssize_t{0});
    QCOMPARE(readAll(reader), std::string(100, 'x') + std::string(28, 'y'));
    QCOMPARE(writer.write_some(pieces), ssize_t{72});
    QCOMPARE(readAll(reader), std::string(72, 'y'));
  }

  void testTheReaderIsWokenOnlyWhenItSaidItSleeps() {
    Region r(256);
    ShmRing writer(r.base(), r.bytes()), reader(r.base(), r.bytes());
    std::vector<std::string> parts = {"ping"};
    std::vector<iovec> pieces = piecesOf(parts);
    writer.write_some(pieces);
    QVERIFY(!writer.reader_needs_wake());  // awake: it will see the bytes
    QVERIFY(reader.going_to_sleep());      // bytes are there: it must not sleep
    reader.awake();
    QCOMPARE(readAll(reader), std::string("ping"));
    QVERIFY(!reader.going_to_sleep());  // nothing there: it sleeps
    parts = {"pong"};
    pieces = piecesOf(parts);
    writer.write_some(pieces);
    QVERIFY(writer.reader_needs_wake());
    reader.awake();
    QVERIFY(!writer.reader_needs_wake());
  }

  void testTheWriterIsToldOfRoomOnlyWhenItWaits() {
    Region r(64);
    ShmRing writer(r.base(), r.bytes()), reader(r.base(), r.bytes());
    std::vector<std::string> parts = {std::string(64, 'f')};
    std::vector<iovec> pieces = piecesOf(parts);
    writer.write_some(pieces);
    uint8_t out[8];
    reader.read(out, 8);
    QVERIFY(!reader.writer_needs_wake());
    reader.read(out, 8);
    parts = {std::string(32, 'g')};
    pieces = piecesOf(parts);
    writer.write_some(pieces);         // full again
    QVERIFY(!writer.wait_for_room());  // no room: it waits for the reader's signal
    reader.read(out, 8);
    QVERIFY(reader.writer_needs_wake());
    writer.stop_waiting_for_room();
    QVERIFY(!reader.writer_needs_wake());
    QVERIFY(writer.wait_for_room());  // room came before it said it waits: it writes now
  }

  void testARegionThatIsNotARingIsRefused() {
    std::vector<uint64_t> junk(1024, 0x4141414141414141ULL);
    try {
      ShmRing ring(junk.data(), junk.size() * 8);
      QFAIL("attached to junk");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("not a ddpscope RPC ring"), e.what());
    }
    Region r(1024);
    try {
      ShmRing ring(r.base(), 4096 + 512);  // claims 1024 bytes of ring in a region with room for 512
      QFAIL("attached past the region's end");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("1024"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(Error, ShmRing::format(r.base(), 1000));  // not a power of two
  }

  // What a broken or hostile peer might write into the indices.
  void testIndicesOutOfRangeAreCaughtNotFollowed() {
    QFETCH(uint64_t, tail);
    QFETCH(uint64_t, head);
    Region r(256);
    ShmRing writer(r.base(), r.bytes()), reader(r.base(), r.bytes());
    auto* words = static_cast<uint64_t*>(r.base());
    words[64 / 8] = tail;  // the tail's cache line
    words[128 / 8] = head;
    QVERIFY(reader.broken());
    QCOMPARE(reader.readable(), size_t{0});
    uint8_t out[16];
    QCOMPARE(reader.read(out, sizeof(out)), size_t{0});
    std::vector<std::string> parts = {"x"};
    std::vector<iovec> pieces = piecesOf(parts);
    QCOMPARE(writer.write_some(pieces), ssize_t{-1});
    QVERIFY(reader.going_to_sleep());  // broken: the reader looks instead of sleeping
  }
  void testIndicesOutOfRangeAreCaughtNotFollowed_data() {
    QTest::addColumn<uint64_t>("tail");
    QTest::addColumn<uint64_t>("head");
    QTest::newRow("more written than the ring holds") << uint64_t{1000} << uint64_t{0};
    QTest::newRow("read past what was written") << uint64_t{10} << uint64_t{20};
    QTest::newRow("huge") << ~uint64_t{0} << uint64_t{1};
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestShmRing)
#include "tst_shm_ring.moc"
