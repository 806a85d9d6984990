// ShutdownTally: worker 0's count of graceful-shutdown votes. A round answers every voter
// with the sum once all have voted; a worker that has not voted but answers is waited for
// (the voter is told to vote again, and its second vote is the same vote, also after the
// round completed); one that does not answer makes the others fail, named.
#include <QtTest/QtTest>

#include <atomic>
#include <future>
#include <thread>

#include "rpc/shutdown_tally.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using ddpscope::rpc::ShutdownTally;
using namespace std::chrono_literals;

namespace {

// Every worker asked answers (all alive) / none does.
std::vector<int32_t> all_answer(const std::vector<int32_t>&) { return {}; }
std::vector<int32_t> none_answers(const std::vector<int32_t>& asked) { return asked; }

}  // namespace

class TestShutdownTally : public QObject {
  Q_OBJECT

 private slots:
  void testRoundAnswersEveryVoterWithTheSum() {
    ShutdownTally tally(3);
    auto a = std::async(std::launch::async, [&] { return tally.vote(0, 0, 2, 5000ms, all_answer); });
    auto b = std::async(std::launch::async, [&] { return tally.vote(0, 1, 0, 5000ms, all_answer); });
    QCOMPARE(tally.vote(0, 2, 1, 5000ms, all_answer), int64_t{3});
    QCOMPARE(a.get(), int64_t{3});
    QCOMPARE(b.get(), int64_t{3});
    // The next round starts from zero.
    auto c = std::async(std::launch::async, [&] { return tally.vote(1, 0, 0, 5000ms, all_answer); });
    auto d = std::async(std::launch::async, [&] { return tally.vote(1, 1, 0, 5000ms, all_answer); });
    QCOMPARE(tally.vote(1, 2, 0, 5000ms, all_answer), int64_t{0});
    QCOMPARE(c.get() + d.get(), int64_t{0});
  }

  // The round that ends shutdown: worker 0 waits until every voter has had its sum, so that
  // a voter told to vote again (between two votes when worker 0's vote completed the round)
  // still finds worker 0 there.
  void testWorkerZeroWaitsUntilEveryVoterHasItsSum() {
    ShutdownTally tally(2);
    QCOMPARE(tally.vote(0, 1, 0, 20ms, all_answer), ShutdownTally::kStillWaiting);  // worker 0 still works
    QCOMPARE(tally.vote(0, 0, 0, 5000ms, all_answer), int64_t{0});                  // completes the round
    std::atomic<bool> revoted{false};
    auto voter = std::async(std::launch::async, [&] {
      std::this_thread::sleep_for(100ms);
      revoted = true;
      return tally.vote(0, 1, 0, 5000ms, all_answer);
    });
    tally.wait_until_all_answered(0, 10000ms);
    QVERIFY(revoted);  // it returned once worker 1 voted again, not before
    QCOMPARE(voter.get(), int64_t{0});
    // Every voter answered: no wait at all.
    const auto start = std::chrono::steady_clock::now();
    tally.wait_until_all_answered(0, 10000ms);
    QVERIFY(std::chrono::steady_clock::now() - start < 5000ms);
  }

  // Worker 1 still works (it answers): the others are told to vote again, however long it
  // takes; a vote again counts once, and one made after the round completed gets its sum.
  void testAWorkerThatStillWorksIsWaitedFor() {
    ShutdownTally tally(3);
    std::vector<int32_t> asked;
    const auto alive = [&](const std::vector<int32_t>& missing) {
      asked = missing;
      return std::vector<int32_t>{};
    };
    QCOMPARE(tally.vote(0, 0, 2, 50ms, alive), ShutdownTally::kStillWaiting);
    QCOMPARE(asked, (std::vector<int32_t>{1, 2}));
    QCOMPARE(tally.vote(0, 2, 1, 50ms, alive), ShutdownTally::kStillWaiting);
    QCOMPARE(tally.vote(0, 0, 2, 50ms, alive), ShutdownTally::kStillWaiting);  // again: the same vote
    QCOMPARE(asked, (std::vector<int32_t>{1}));
    auto zero = std::async(std::launch::async, [&] { return tally.vote(0, 0, 2, 5000ms, alive); });
    std::this_thread::sleep_for(50ms);
    QCOMPARE(tally.vote(0, 1, 4, 5000ms, alive), int64_t{7});  // 2 + 1 + 4: each counted once
    QCOMPARE(zero.get(), int64_t{7});
    QCOMPARE(tally.vote(0, 2, 1, 50ms, alive), int64_t{7});  // after the round completed
  }

  void testAWorkerThatDoesNotAnswerIsNamed() {
    ShutdownTally tally(3);
    for (int ask = 1; ask < ShutdownTally::kMissesBeforeGone; ++ask)  // a missed answer or two: waited for
      QCOMPARE(tally.vote(0, 2, 0, 20ms, none_answers), ShutdownTally::kStillWaiting);
    try {
      tally.vote(0, 2, 0, 100ms, none_answers);
      QFAIL("a round with a missing worker completed");
    } catch (const ddpscope::Error& e) {
      QVERIFY2(QString::fromStdString(e.message())
                   .contains("worker(s) 0, 1 did not reach shutdown and do not answer (stopped, or hung"),
               e.what());
    }
  }

  // A worker still working on a loaded machine may miss an ask (a quarter of the RPC
  // timeout): it is waited for as long as it answers one in kMissesBeforeGone, and its
  // count starts again when it answers.
  void testAMissedAnswerOnABusyWorkerIsNotTheEnd() {
    ShutdownTally tally(2);
    bool answers = false;
    const auto sometimes = [&](const std::vector<int32_t>& missing) {
      return answers ? std::vector<int32_t>{} : missing;
    };
    for (int round = 0; round < 3; ++round) {
      for (int miss = 1; miss < ShutdownTally::kMissesBeforeGone; ++miss)
        QCOMPARE(tally.vote(0, 1, 0, 20ms, sometimes), ShutdownTally::kStillWaiting);
      answers = true;
      QCOMPARE(tally.vote(0, 1, 0, 20ms, sometimes), ShutdownTally::kStillWaiting);
      answers = false;
    }
    auto one = std::async(std::launch::async, [&] { return tally.vote(0, 1, 0, 5000ms, sometimes); });
    std::this_thread::sleep_for(50ms);
    QCOMPARE(tally.vote(0, 0, 3, 5000ms, sometimes), int64_t{3});  // worker 0 got there: the round completes
    QCOMPARE(one.get(), int64_t{3});
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestShutdownTally)
#include "tst_shutdown_tally.moc"
