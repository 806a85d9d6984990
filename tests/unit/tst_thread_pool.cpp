// The RPC thread pool: tasks that block do not hold up the next (the pool grows past its
// core up to its max, which keeps nested calls from deadlocking), a task past the max
// is queued and submit says so, threads above the core leave once idle, and the
// destructor runs what was queued before it joins.
#include <QtTest/QtTest>

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "ddpscope/error.h"
#include "eventually.h"
#include "rpc/thread_pool.h"
#include "test_registry.h"

using ddpscope::rpc::ThreadPool;
using namespace std::chrono_literals;

namespace {

// A gate tasks wait at until the test opens it.
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

// Opens the gate when a test returns early (a failed check), so that the pool's
// destructor, which joins its threads, does not wait for ever. Declared after the pool.
struct OpenAtExit {
  Gate& gate;
  ~OpenAtExit() { gate.release(); }
};

}  // namespace

class TestThreadPool : public QObject {
  Q_OBJECT

 private slots:
  void testBlockedTasksDoNotHoldUpTheNext() {
    Gate gate;
    ThreadPool pool(1, 8);
    OpenAtExit opener{gate};
    std::atomic<int> waiting{0}, ran{0};
    for (int i = 0; i < 3; ++i) {
      pool.submit([&] {
        ++waiting;
        gate.wait();
      });
    }
    // The fourth task runs while the three before it still wait: the pool grew.
    pool.submit([&] { ++ran; });
    QVERIFY2(eventually([&] { return ran == 1 && waiting == 3; }),
             qPrintable(QString("ran %1, waiting %2").arg(ran.load()).arg(waiting.load())));
    QVERIFY2(pool.threads() >= 4 && pool.threads() <= 8, qPrintable(QString::number(pool.threads())));
    gate.release();
  }

  void testAtItsMaxATaskIsQueuedAndSubmitSaysSo() {
    Gate gate;
    ThreadPool pool(1, 2);
    OpenAtExit opener{gate};
    std::atomic<int> started{0}, last{0};
    for (int i = 0; i < 2; ++i) {
      pool.submit([&] {
        ++started;
        gate.wait();
      });
    }
    QVERIFY(eventually([&] { return started == 2; }));
    QVERIFY(!pool.submit([&] { ++last; }));  // both threads busy: queued
    QTest::qWait(50);
    QCOMPARE(last.load(), 0);
    gate.release();
    QVERIFY(eventually([&] { return last == 1; }));  // and run once a thread is free
    QCOMPARE(pool.threads(), 2);
  }

  void testThreadsAboveTheCoreLeaveWhenIdle() {
    Gate gate;
    ThreadPool pool(1, 3, 50ms);
    OpenAtExit opener{gate};
    std::atomic<int> started{0};
    for (int i = 0; i < 3; ++i)
      pool.submit([&] {
        ++started;
        gate.wait();
      });
    QVERIFY(eventually([&] { return started == 3; }));
    QCOMPARE(pool.threads(), 3);
    gate.release();
    QVERIFY2(eventually([&] { return pool.threads() == 1; }), qPrintable(QString::number(pool.threads())));
    // The core thread stays and still runs work.
    std::atomic<bool> ran{false};
    pool.submit([&] { ran = true; });
    QVERIFY(eventually([&] { return ran.load(); }));
  }

  void testTheDestructorRunsWhatWasQueued() {
    std::atomic<int> ran{0};
    {
      Gate gate;
      ThreadPool pool(1, 1);
      pool.submit([&] {
        gate.wait();
        ++ran;
      });
      for (int i = 0; i < 5; ++i)
        pool.submit([&] { ++ran; });
      gate.release();
    }
    QCOMPARE(ran.load(), 6);
  }

  void testBadSizesAreRefused() {
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, ThreadPool pool(0, 1));
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, ThreadPool pool(3, 2));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestThreadPool)
#include "tst_thread_pool.moc"
