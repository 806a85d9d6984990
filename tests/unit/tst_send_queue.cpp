// What a stream transport keeps of a message the connection did not take at once: the
// head and frames without an owner are copied (their bytes may go as send() returns),
// frames with an owner are kept as they are; it is written out in order, as far as each
// write takes, and a broken connection is said.
#include <QtTest/QtTest>

#include <memory>
#include <string>

#include "rpc/send_queue.h"

using namespace ddpscope::rpc;

namespace {

// A connection that takes at most `per_write` bytes each time, into `out`.
struct Trickle {
  std::string out;
  size_t per_write;
  ssize_t operator()(std::vector<iovec>& pieces) {
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
    std::vector<uint8_t> head = {1, 2, 3, 4};
    std::vector<iovec> pieces = message_pieces(head, frames);
    QCOMPARE(pieces.size(), size_t{3});  // the empty frame has no piece
    Trickle first{{}, 6};
    first(pieces);  // the head and 2 bytes of the loose frame went at once
    SendQueue q;
    q.keep(pieces, frames);
    loose.assign(loose.size(), '#');  // the caller's bytes change once send() returned
    std::fill(head.begin(), head.end(), 0);
    Trickle rest{{}, 7};
    while (!q.empty())
      QVERIFY(q.flush(std::ref(rest)));
    QCOMPARE(QString::fromStdString(rest.out), QString::fromStdString("ose frame" + *owned));
  }

  void testAnOwnedFramesBytesAreSentFromItsOwnMemory() {
    auto owned = std::make_shared<std::string>(64, 'a');
    std::vector<OutgoingFrame> frames = {{owned->data(), owned->size(), owned}};
    std::vector<uint8_t> head = {9};
    std::vector<iovec> pieces = message_pieces(head, frames);
    Trickle none{{}, 0};
    none(pieces);
    SendQueue q;
    q.keep(pieces, frames);
    (*owned)[10] = 'Z';  // kept by reference: the change goes out
    Trickle all{{}, 1 << 20};
    QVERIFY(q.flush(std::ref(all)));
    QVERIFY(q.empty());
    QCOMPARE(all.out.size(), size_t{65});
    QCOMPARE(all.out[11], 'Z');
  }

  void testABrokenConnectionIsSaid() {
    std::string s = "x";
    std::vector<OutgoingFrame> frames = {{s.data(), s.size(), nullptr}};
    std::vector<uint8_t> head = {1};
    std::vector<iovec> pieces = message_pieces(head, frames);
    SendQueue q;
    q.keep(pieces, frames);
    QVERIFY(!q.flush([](std::vector<iovec>&) { return ssize_t{-1}; }));
    q.clear();
    QVERIFY(q.empty());
  }
};

QTEST_GUILESS_MAIN(TestSendQueue)
#include "tst_send_queue.moc"
