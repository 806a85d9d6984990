// A message as a stream transport writes it (its head, then its frames, allocating nothing
// up to 8 frames), and what it keeps of one the connection did not take at once: the
// head and frames without an owner are copied (their bytes may go as send() returns),
// frames with an owner are kept as they are; it is written out in order, as far as each
// write takes, and a broken connection is said.
#include <QtTest/QtTest>

#include <memory>
#include <string>

#include "rpc/send_queue.h"
#include "rpc/stream_framing.h"
#include "test_registry.h"

using namespace ddpscope::rpc;

namespace {

// A connection that takes at most `per_write` bytes each time, into `out`.
struct Trickle {
  std::string out;
  size_t per_write;
  ssize_t operator()(std::span<iovec> pieces) {
    size_t left = per_write, total = 0;
    for (iovec& v : pieces) {
      const size_t n = std::min(left, v.iov_len);
      out.append(static_cast<const char*>(v.iov_base), n);
      v.iov_base = static_cast<char*>(v.iov_base) + n;
      v.iov_len -= n;
      left -= n;
      total += n;
      if (v.iov_len > 0) break;
    }
    return static_cast<ssize_t>(total);
  }
};

}  // namespace

class TestSendQueue : public QObject {
  Q_OBJECT

 private slots:
  void testWhatIsLeftGoesOutInOrderAndOwnedFramesAreNotCopied() {
    auto owned = std::make_shared<std::string>(1000, 'o');
    std::string loose = "loose frame";
    std::vector<OutgoingFrame> frames = {
        {loose.data(), loose.size(), nullptr}, {nullptr, 0, nullptr}, {owned->data(), owned->size(), owned}};
    auto message = std::make_unique<MessagePieces>(frames);
    std::span<iovec> pieces = message->pieces();
    QCOMPARE(pieces.size(), size_t{3});  // the head; the empty frame has no piece
    QCOMPARE(pieces[0].iov_len, size_t{4 + 8 * 3});
    Trickle first{{}, 30};
    first(pieces);  // the head and 2 bytes of the loose frame went at once
    SendQueue q;
    q.keep(pieces, frames);
    loose.assign(loose.size(), '#');  // the caller's bytes change once send() returned
    message.reset();                  // and its head is gone
    Trickle rest{{}, 7};
    while (!q.empty())
      QVERIFY(q.flush(std::ref(rest)));
    QCOMPARE(QString::fromStdString(rest.out), QString::fromStdString("ose frame" + *owned));
  }

  void testAnOwnedFramesBytesAreSentFromItsOwnMemory() {
    auto owned = std::make_shared<std::string>(64, 'a');
    std::vector<OutgoingFrame> frames = {{owned->data(), owned->size(), owned}};
    MessagePieces message(frames);
    std::span<iovec> pieces = message.pieces();
    Trickle none{{}, 0};
    none(pieces);
    SendQueue q;
    q.keep(pieces, frames);
    (*owned)[10] = 'Z';  // kept by reference: the change goes out
    Trickle all{{}, 1 << 20};
    QVERIFY(q.flush(std::ref(all)));
    QVERIFY(q.empty());
    QCOMPARE(all.out.size(), size_t{12 + 64});
    QCOMPARE(all.out[12 + 10], 'Z');
  }

  // Many frames (a call with many tensors) go past the inline room: the same bytes.
  void testAMessageOfManyFramesIsWholeToo() {
    std::vector<std::string> parts;
    std::vector<OutgoingFrame> frames;
    for (int k = 0; k < 20; ++k)
      parts.push_back(std::string(static_cast<size_t>(k + 1), char('a' + k)));
    for (const auto& p : parts)
      frames.push_back({p.data(), p.size(), nullptr});
    MessagePieces message(frames);
    QCOMPARE(message.pieces().size(), size_t{21});
    Trickle all{{}, 1 << 20};
    all(message.pieces());
    std::string expected(reinterpret_cast<const char*>(encode_frame_sizes(frames).data()), 4 + 8 * 20);
    for (const auto& p : parts)
      expected += p;
    QVERIFY(all.out == expected);
  }

  void testABrokenConnectionIsSaid() {
    std::string s = "x";
    std::vector<OutgoingFrame> frames = {{s.data(), s.size(), nullptr}};
    MessagePieces message(frames);
    std::span<iovec> pieces = message.pieces();
    SendQueue q;
    q.keep(pieces, frames);
    QVERIFY(!q.flush([](std::span<iovec>) { return ssize_t{-1}; }));
    q.clear();
    QVERIFY(q.empty());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSendQueue)
#include "tst_send_queue.moc"
