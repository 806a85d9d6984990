// The RPC decoder on its own: every seed of the fuzz corpus replayed (well-formed seeds
// decode, 'bad-' seeds are refused with a WireError), and each kind of bad input the
// agent must survive, rejected for the right reason.
#include <QtTest/QtTest>

#include <QDir>
#include <QFile>

#include "fuzz_frames.h"
#include "rpc/wire_format.h"
#include "test_registry.h"

using namespace ddpscope::rpc::wire;

namespace {

std::string header_bytes(uint8_t type, uint32_t tensors, uint8_t flags = 0, int64_t ctx_id = -1) {
  Header h;
  h.type = type;
  h.flags = flags;
  h.ctx_id = ctx_id;
  h.src = 0;
  h.dst = 1;
  h.num_tensors = tensors;
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h));
}

DecodedMessage decode(const std::vector<std::string>& frames) {
  std::vector<FrameView> views;
  for (const auto& f : frames)
    views.push_back({reinterpret_cast<const uint8_t*>(f.data()), f.size()});
  return decode_message(views, ddpscope::fuzz::kFuzzToken);
}

std::string call_body(const std::function<void(BodyWriter&)>& args, uint32_t n) {
  BodyWriter w;
  w.list(2);
  w.string("echo");
  w.list(n);
  args(w);
  return w.take();
}

}  // namespace

class TestWireFormat : public QObject {
  Q_OBJECT
 private slots:
  void testCorpusReplays() {
    QDir dir(DDPSCOPE_FUZZ_CORPUS);
    const auto files = dir.entryList(QDir::Files);
    QVERIFY2(files.size() >= 15, qPrintable(dir.absolutePath()));
    for (const QString& name : files) {
      QFile f(dir.filePath(name));
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QByteArray bytes = f.readAll();
      const auto frames = ddpscope::fuzz::split_frames(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      bool ok = true;
      QString why;
      try {
        decode_message(frames, ddpscope::fuzz::kFuzzToken);
      } catch (const WireError& e) {
        ok = false;
        why = QString::fromStdString(e.message());
      }
      QVERIFY2(ok != name.startsWith("bad-"), qPrintable(name + ": " + (ok ? "decoded" : why)));
    }
  }

  void testWellFormedCall() {
    const std::string data(36, '\0');
    const auto m = decode({std::string(ddpscope::fuzz::kFuzzToken), header_bytes(1, 1),
                           call_body(
                               [](BodyWriter& w) {
                                 w.tensor(0, true, {3, 3}, 0);
                               },
                               1),
                           data});
    QCOMPARE(m.body.list[0].s, std::string("echo"));
    const auto& t = m.body.list[1].list[0].tensor;
    QCOMPARE(t.sizes, (std::vector<int64_t>{3, 3}));
    QVERIFY(t.requires_grad);
    QCOMPARE(m.tensor_frames[0].size, size_t(36));
  }

  void testRejections_data() {
    QTest::addColumn<int>("why");
    QTest::addColumn<QString>("message");
    QTest::addColumn<int>("which");
    QTest::newRow("no token") << int(Rejection::Token) << "token" << 0;
    QTest::newRow("short header") << int(Rejection::Malformed) << "header of 3 bytes" << 1;
    QTest::newRow("truncated body") << int(Rejection::Malformed) << "truncated" << 2;
    QTest::newRow("terabyte tensor") << int(Rejection::Malformed) << "its frame has 4" << 3;
    QTest::newRow("overflowing sizes") << int(Rejection::Malformed) << "overflow" << 4;
    QTest::newRow("unknown dtype") << int(Rejection::Malformed) << "unknown dtype code 9" << 5;
    QTest::newRow("unknown type") << int(Rejection::Malformed) << "unknown message type 77" << 6;
    QTest::newRow("lying list count") << int(Rejection::Malformed) << "list claims 4294967295" << 7;
    QTest::newRow("frames missing") << int(Rejection::Malformed) << "claims 2 tensor frames" << 8;
    QTest::newRow("frame undescribed") << int(Rejection::Malformed) << "not described" << 9;
    QTest::newRow("deep nesting") << int(Rejection::Malformed) << "nested deeper" << 10;
    QTest::newRow("wrong body shape") << int(Rejection::Malformed) << "call body must be" << 11;
    QTest::newRow("unknown flags") << int(Rejection::Malformed) << "unknown header flags 0x82" << 12;
    QTest::newRow("bad context id") << int(Rejection::Malformed) << "context id -7" << 13;
  }
  void testRejections() {
    QFETCH(int, why);
    QFETCH(QString, message);
    QFETCH(int, which);
    const std::string tok(ddpscope::fuzz::kFuzzToken);
    const std::string empty_call = call_body([](BodyWriter&) {}, 0);
    std::vector<std::string> frames;
    switch (which) {
      case 0: frames = {"intruder", header_bytes(1, 0), empty_call}; break;
      case 1: frames = {tok, "abc", empty_call}; break;
      case 2: frames = {tok, header_bytes(1, 0), empty_call.substr(0, 9)}; break;
      case 3:
        frames = {tok, header_bytes(1, 1),
                  call_body([](BodyWriter& w) { w.tensor(0, false, {int64_t{1} << 40}, 0); }, 1), "abcd"};
        break;
      case 4:
        frames = {tok, header_bytes(1, 1),
                  call_body(
                      [](BodyWriter& w) {
                        w.tensor(1, false, {int64_t{1} << 62, 1 << 20}, 0);
                      },
                      1),
                  "abcd"};
        break;
      case 5:
        frames = {tok, header_bytes(1, 1), call_body([](BodyWriter& w) { w.tensor(9, false, {1}, 0); }, 1), "abcd"};
        break;
      case 6: frames = {tok, header_bytes(77, 0), empty_call}; break;
      case 7: {
        std::string body = "\x05\xff\xff\xff\xff";
        frames = {tok, header_bytes(2, 0), body};
        break;
      }
      case 8: frames = {tok, header_bytes(1, 2), empty_call}; break;
      case 9: frames = {tok, header_bytes(1, 1), empty_call, "abcd"}; break;
      case 10: {
        BodyWriter w;
        for (int i = 0; i < 40; ++i)
          w.list(1);
        w.none();
        frames = {tok, header_bytes(2, 0), w.take()};
        break;
      }
      case 11: {
        BodyWriter w;
        w.integer(3);
        frames = {tok, header_bytes(1, 0), w.take()};
        break;
      }
      case 12: frames = {tok, header_bytes(1, 0, 0x82), empty_call}; break;
      case 13: frames = {tok, header_bytes(1, 0, 0, -7), empty_call}; break;
    }
    try {
      decode(frames);
      QFAIL("accepted");
    } catch (const WireError& e) {
      QCOMPARE(int(e.rejection()), why);
      QVERIFY2(QString::fromStdString(e.message()).contains(message), e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestWireFormat)
#include "tst_wire_format.moc"
