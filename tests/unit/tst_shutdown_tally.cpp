// ShutdownTally: worker 0's count of graceful-shutdown votes. A round answers every voter
// with the sum once all have voted; a worker that never votes makes the others fail
// after the timeout, naming it; a double vote is refused.
#include <QtTest/QtTest>

#include <future>
#include <thread>

#include "rpc/shutdown_tally.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using ddpscope::rpc::ShutdownTally;
using namespace std::chrono_literals;

class TestShutdownTally : public QObject {
  Q_OBJECT

 private slots:
  void testRoundAnswersEveryVoterWithTheSum() {
    ShutdownTally tally(3);
    auto a = std::async(std::launch::async, [&] { return tally.vote(0, 0, 2, 5000ms); });
    auto b = std::async(std::launch::async, [&] { return tally.vote(0, 1, 0, 5000ms); });
    QCOMPARE(tally.vote(0, 2, 1, 5000ms), int64_t{3});
    QCOMPARE(a.get(), int64_t{3});
    QCOMPARE(b.get(), int64_t{3});
    // The next round starts from zero.
    auto c = std::async(std::launch::async, [&] { return tally.vote(1, 0, 0, 5000ms); });
    auto d = std::async(std::launch::async, [&] { return tally.vote(1, 1, 0, 5000ms); });
    QCOMPARE(tally.vote(1, 2, 0, 5000ms), int64_t{0});
    QCOMPARE(c.get() + d.get(), int64_t{0});
  }

  void testMissingWorkerIsNamedAfterTheTimeout() {
    ShutdownTally tally(3);
    auto a = std::async(std::launch::async, [&] { return tally.vote(0, 0, 0, 200ms); });
    try {
      tally.vote(0, 2, 0, 200ms);
      QFAIL("a round with a missing worker completed");
    } catch (const ddpscope::Error& e) {
      QVERIFY2(QString::fromStdString(e.message()).contains("worker(s) 1 did not reach shutdown within 200 ms"),
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, a.get());
  }

  void testDoubleVoteIsRefused() {
    ShutdownTally tally(2);
    auto a = std::async(std::launch::async, [&] { return tally.vote(0, 0, 0, 300ms); });
    std::this_thread::sleep_for(50ms);
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, tally.vote(0, 0, 0, 300ms));
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, a.get());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestShutdownTally)
#include "tst_shutdown_tally.moc"
