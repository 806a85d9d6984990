// ddpscope/unique_fd.h and the transports' EpollSet (engine/rpc/epoll_set.h): a descriptor
// closes exactly once, with its last owner; an epoll set says when the kernel refused a
// descriptor (the transports then drop that connection instead of leaving it unwatched).
#include <QtTest/QtTest>

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "ddpscope/unique_fd.h"
#include "rpc/epoll_set.h"
#include "test_registry.h"

using ddpscope::UniqueFd;
using ddpscope::rpc::EpollSet;

namespace {
bool isOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }
}  // namespace

class TestUniqueFd : public QObject {
  Q_OBJECT

 private slots:
  void testClosesOnceWithItsLastOwner() {
    int ends[2];
    QCOMPARE(::pipe(ends), 0);
    const int read_end = ends[0];
    ::close(ends[1]);
    {
      UniqueFd first(read_end);
      QVERIFY(first.valid());
      UniqueFd second(std::move(first));
      QVERIFY(!first.valid());  // moved from: it closes nothing
      QCOMPARE(second.get(), read_end);
      QVERIFY(isOpen(read_end));
      UniqueFd third;
      third = std::move(second);
      QVERIFY(isOpen(read_end));
    }
    QVERIFY(!isOpen(read_end));  // closed when `third` went
    UniqueFd none;
    none.reset();  // nothing held: nothing closed
    QVERIFY(!none.valid());
  }

  void testTheEpollSetSaysWhatTheKernelRefused() {
    EpollSet set;
    int ends[2];
    QCOMPARE(::pipe(ends), 0);
    UniqueFd read_end(ends[0]), write_end(ends[1]);
    QVERIFY(set.add(read_end.get(), EPOLLIN, {3, 7}));
    QVERIFY(!set.add(read_end.get(), EPOLLIN, {3, 7}));       // already there (EEXIST)
    QVERIFY(!set.add(-1, EPOLLIN, {3, 8}));                   // no such descriptor
    QVERIFY(!set.modify(write_end.get(), EPOLLOUT, {3, 9}));  // not in the set
    std::vector<std::pair<int, uint64_t>> seen;               // each ready descriptor's kind and index
    const auto record = [&](ddpscope::rpc::EpollTag tag, uint32_t events) {
      QVERIFY(events & EPOLLIN);
      seen.emplace_back(tag.kind, tag.index);
    };
    QCOMPARE(set.dispatch(std::chrono::milliseconds(0), record), 0);
    QCOMPARE(::write(write_end.get(), "x", 1), ssize_t{1});
    QCOMPARE(set.dispatch(std::chrono::milliseconds(1000), record), 1);
    // The widest kind and index come back whole: one is not folded into the other.
    const uint64_t widest = (uint64_t{1} << 56) - 1;
    QVERIFY(set.modify(read_end.get(), EPOLLIN, {255, widest}));
    QCOMPARE(set.dispatch(std::chrono::milliseconds(1000), record), 1);
    QCOMPARE(seen, (std::vector<std::pair<int, uint64_t>>{{3, 7}, {255, widest}}));
    set.remove_before_close(read_end.get());
    set.remove_before_close(read_end.get());  // twice: quiet
    QCOMPARE(set.dispatch(std::chrono::milliseconds(0), record), 0);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestUniqueFd)
#include "tst_unique_fd.moc"
