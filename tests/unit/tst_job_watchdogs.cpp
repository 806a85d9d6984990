// The launcher's watchdogs: the failure grace fires once after the first report, the
// start watchdog names what is known and is disarmed by a start or a failure, the end
// watchdog starts at the first end after training (in whichever order the two are read)
// and names the ranks still stuck, and a malformed limit is refused naming it.
#include <QtTest/QtTest>

#include "process_fixture.h"
#include "test_registry.h"

using namespace ddpscope::apps;
using namespace std::chrono_literals;
using namespace ddpscope::testing::process_fixture;

class TestJobWatchdogs : public ProcessTest {
  Q_OBJECT

 private slots:

  void testFailureGraceFiresOnceAfterTheFirstReport() {
    const auto t0 = WatchdogClock::now();
    FailureGraceWatchdog w(15s);
    QVERIFY(!w.expired(t0 + 1h));  // no rank failed: never
    w.rank_failed(2, t0);
    w.rank_failed(3, t0 + 10s);  // the first report counts
    QVERIFY(!w.expired(t0 + 14s));
    const auto why = w.expired(t0 + 15s);
    QVERIFY(why);
    QVERIFY2(why->find("15 s after rank 2 reported its failure") != std::string::npos, why->c_str());
    QVERIFY(!w.expired(t0 + 20s));
  }

  void testStartWatchdogNamesWhatIsKnownAndIsDisarmedByAStartOrAFailure() {
    const auto t0 = WatchdogClock::now();
    StartWatchdog w(180s, t0);
    int asked = 0;
    const auto why = [&] {
      ++asked;
      return std::string("; ranks that never reached the run's collector: 1");
    };
    QVERIFY(!w.expired(t0 + 179s, why));
    QCOMPARE(asked, 0);  // the run file is read only when the limit has passed
    const auto fired = w.expired(t0 + 180s, why);
    QVERIFY(fired);
    QVERIFY2(fired->find("had not started training 180 s after launch") != std::string::npos &&
                 fired->find("DDPSCOPE_START_TIMEOUT_MS") != std::string::npos &&
                 fired->find("collector: 1") != std::string::npos,
             fired->c_str());
    QVERIFY(!w.expired(t0 + 300s, why));

    StartWatchdog started(1s, t0);
    started.started();
    QVERIFY(!started.expired(t0 + 1h, why));
    StartWatchdog failed(1s, t0);
    failed.rank_failed();
    QVERIFY(!failed.expired(t0 + 1h, why));

    // A job that trains nothing (an RPC example) is watched too, in its own words.
    StartWatchdog rpc(5s, t0, /*trains=*/false);
    QVERIFY(!rpc.expired(t0 + 4s, why));
    const auto rpc_fired = rpc.expired(t0 + 5s, why);
    QVERIFY(rpc_fired);
    QVERIFY2(
        rpc_fired->find("had not started 5 s after launch: a rank is stuck in its start-up") != std::string::npos &&
            rpc_fired->find("training") == std::string::npos,
        rpc_fired->c_str());
  }

  void testEndWatchdogStartsAtTheFirstEndAfterTrainingAndNamesTheStuckRanks() {
    const auto t0 = WatchdogClock::now();
    EndWatchdog w(60s, 4);
    w.rank_ended(0, t0);  // before training is done: no clock yet
    QVERIFY(!w.expired(t0 + 1h));
    w.training_done(t0 + 10s);  // from here
    w.rank_ended(1, t0 + 10s);
    w.rank_ended(3, t0 + 20s);
    QVERIFY(!w.expired(t0 + 69s));
    const auto why = w.expired(t0 + 70s);
    QVERIFY(why);
    QVERIFY2(why->find("rank 2 never reported its end") != std::string::npos, why->c_str());
    QVERIFY(!w.expired(t0 + 2h));

    EndWatchdog all(1s, 2);
    all.training_done(t0);
    all.rank_ended(0, t0);
    all.rank_ended(1, t0);
    const auto shutdown = all.expired(t0 + 1s);
    QVERIFY(shutdown && shutdown->find("stuck in MPI's shutdown") != std::string::npos);

    EndWatchdog failed(1s, 2);
    failed.training_done(t0);
    failed.rank_ended(0, t0);
    failed.rank_failed();
    QVERIFY(!failed.expired(t0 + 1h));
  }

  // Rank 0's end (stderr) read before its "done" line (stdout), as a loaded machine
  // delivers them, while rank 1 is stopped after training: the clock starts at "done".
  void testEndWatchdogStartsWhenTheEndIsReadBeforeTheDoneLine() {
    const auto t0 = WatchdogClock::now();
    EndWatchdog w(3s, 2);
    w.rank_ended(0, t0);
    w.training_done(t0 + 1s);
    QVERIFY(!w.expired(t0 + 3900ms));
    const auto why = w.expired(t0 + 4s);
    QVERIFY(why);
    QVERIFY2(why->find("rank 1 never reported its end") != std::string::npos, why->c_str());
  }

  // A job that trains nothing (an RPC example): its first rank's end starts the clock, and
  // the words do not speak of training (issue 68: a stopped worker hung such jobs for ever).
  void testEndWatchdogOfAJobThatTrainsNothing() {
    const auto t0 = WatchdogClock::now();
    EndWatchdog w(10s, 2);
    w.trains_nothing();
    QVERIFY(!w.expired(t0 + 1h));  // no rank ended: nothing to time
    w.rank_ended(1, t0 + 70s);
    QVERIFY(!w.expired(t0 + 79s));
    const auto why = w.expired(t0 + 80s);
    QVERIFY(why);
    QVERIFY2(why->rfind("the job had not exited 10 s after the first rank ended", 0) == 0, why->c_str());
    QVERIFY2(why->find("rank 0 never reported its end (stopped, or stuck);") != std::string::npos, why->c_str());
  }

  void testMalformedLimitIsRefusedNamingIt() {
    qputenv("DDPSCOPE_START_TIMEOUT_MS", "3m");
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, WatchdogLimits::from_environment());
    qputenv("DDPSCOPE_START_TIMEOUT_MS", "2500");
    QCOMPARE(WatchdogLimits::from_environment().start_timeout, 2500ms);
    qunsetenv("DDPSCOPE_START_TIMEOUT_MS");
    QCOMPARE(WatchdogLimits::from_environment().start_timeout, 180000ms);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestJobWatchdogs)
#include "tst_job_watchdogs.moc"
