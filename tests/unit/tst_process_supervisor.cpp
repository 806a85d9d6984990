// The launcher's supervisor and watchdogs, in one process with real child processes
// (/bin/sh): lines arrive as events from both streams, stop() ends a command that
// ignores SIGTERM once the grace has passed, our signals arrive as events, nothing is
// left open or running afterwards, and each watchdog fires once, at its limit, only when
// armed.
#include <signal.h>
#include <unistd.h>

#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

#include "ddpscope/error.h"
#include "job_watchdogs.h"
#include "mpirun_messages.h"
#include "process_supervisor.h"

using namespace ddpscope::apps;
using namespace std::chrono_literals;

namespace {

int open_descriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

// Running, or stopped: anything but gone or a zombie (which a container's init may never reap).
bool process_alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

ProcessSupervisor sh(const std::string& script) { return ProcessSupervisor({"/bin/sh", "-c", script}); }

struct Collected {
  QStringList out, err;
  QList<int> received;
  int ticks = 0;
  ProcessSupervisor::Events events() {
    return {[this](const std::string& l) { out << QString::fromStdString(l); },
            [this](const std::string& l) { err << QString::fromStdString(l); }, [this](int s) { received << s; },
            [this](auto) { ++ticks; }};
  }
};

}  // namespace

class TestProcessSupervisor : public QObject {
  Q_OBJECT

 private slots:
  void testLinesFromBothStreamsAndTheExitCode() {
    const int fds_before = open_descriptors();
    {
      auto job = sh("echo one; echo two >&2; printf 'three\\nfour'; exit 3");
      job.start();
      Collected c;
      const int status = job.run(c.events(), 20ms);
      QCOMPARE(ProcessSupervisor::exit_code(status), 3);
      // A last line without its newline is not a line yet: never half a line.
      QCOMPARE(c.out, QStringList({"one", "three"}));
      QCOMPARE(c.err, QStringList({"two"}));
      QVERIFY(c.ticks >= 1);
    }
    QCOMPARE(open_descriptors(), fds_before);
  }

  void testAProgramThatCannotRunExits127SayingWhy() {
    ProcessSupervisor job({"/nonexistent/mpirun", "-np", "2"});
    job.start();
    Collected c;
    QCOMPARE(ProcessSupervisor::exit_code(job.run(c.events())), 127);
    QCOMPARE(c.err.size(), 1);
    QVERIFY2(c.err[0].contains("cannot run /nonexistent/mpirun") && c.err[0].contains("No such file"),
             qPrintable(c.err[0]));
  }

  void testStopEndsACommandThatIgnoresSigtermAfterTheGrace() {
    // The shell ignores SIGTERM, as a hung mpirun does; its child sleeps in the same group.
    auto job = sh("trap '' TERM; echo ready; sleep 30 & wait");
    job.start();
    Collected c;
    QElapsedTimer timer;
    timer.start();
    qint64 asked_at = -1;
    auto events = c.events();
    events.stdout_line = [&](const std::string& line) {
      if (line == "ready") {
        job.stop(400ms);
        asked_at = timer.elapsed();
      }
    };
    const int status = job.run(events, 20ms);
    QVERIFY(asked_at >= 0);
    QVERIFY(job.stopping());
    QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "killed, not ended by SIGTERM");
    QCOMPARE(ProcessSupervisor::exit_code(status), 128 + SIGKILL);
    const qint64 waited = timer.elapsed() - asked_at;
    QVERIFY2(waited >= 400 && waited < 10000, qPrintable(QString::number(waited)));
  }

  void testAskedAgainTheEarlierDeadlineHolds() {
    auto job = sh("trap '' TERM; echo ready; sleep 30 & wait");
    job.start();
    QElapsedTimer timer;
    ProcessSupervisor::Events events;
    events.stdout_line = [&](const std::string&) {
      job.stop(60s);
      job.stop(0ms);  // a second Ctrl-C: now
      job.stop(60s);  // a later, longer grace does not postpone it
      timer.start();
    };
    job.run(events, 20ms);
    QVERIFY2(timer.elapsed() < 10000, qPrintable(QString::number(timer.elapsed())));
  }

  void testOurSignalsArriveAsEventsAndActAsDefaultAfter() {
    struct sigaction before {};
    sigaction(SIGUSR1, nullptr, &before);
    {
      auto job = sh("sleep 30");
      Collected c;
      job.start();
      QVERIFY_THROWS_EXCEPTION(ddpscope::Error, [] {
        auto second = sh("true");
        second.start();  // one supervisor routes signals at a time
      }());
      auto events = c.events();
      events.tick = [&](auto) {
        if (c.ticks++ == 1) {
          raise(SIGUSR1);
          raise(SIGTERM);
        }
        if (c.received.size() == 2) job.stop(0ms);
      };
      job.run(events, 20ms);
      QCOMPARE(c.received, QList<int>({SIGUSR1, SIGTERM}));
    }
    struct sigaction after {};
    sigaction(SIGUSR1, nullptr, &after);
    QVERIFY(after.sa_handler == SIG_DFL);
    // A second job may route them again.
    auto again = sh("exit 0");
    again.start();
    QCOMPARE(ProcessSupervisor::exit_code(again.run({})), 0);
  }

  void testNoProcessOfTheGroupOutlivesTheSupervisor() {
    pid_t sleeper = -1;
    {
      // The command exits at once; a process it started lingers in its group.
      auto job = sh("sleep 30 & echo $!; exit 0");
      job.start();
      ProcessSupervisor::Events events;
      events.stdout_line = [&](const std::string& l) { sleeper = std::stoi(l); };
      QCOMPARE(ProcessSupervisor::exit_code(job.run(events, 20ms)), 0);
    }
    QVERIFY(sleeper > 0);
    QTRY_VERIFY_WITH_TIMEOUT(!process_alive(sleeper), 5000);
  }

  // mpirun puts each rank in a process group of its own: a process the command started
  // in another group (setsid), still running when the command is stopped, or left when
  // the command has exited, is ended too (issue 49: two Ctrl-C's left torch ranks
  // training with PPID 1).
  void testProcessesInOtherGroupsBelowTheCommandEndWithIt() {
    for (const bool exits : {false, true}) {
      pid_t ranks[2] = {-1, -1};
      int seen = 0;
      {
        auto job = sh(std::string("setsid sleep 30 & echo $!; setsid sleep 30 & echo $!; ") +
                      (exits ? "sleep 0.8; exit 0" : "trap '' TERM; sleep 30"));
        job.start();
        ProcessSupervisor::Events events;
        events.stdout_line = [&](const std::string& l) {
          if (seen < 2) ranks[seen++] = std::stoi(l);
        };
        events.tick = [&](auto) {
          if (!exits && seen == 2 && !job.stopping()) job.stop(300ms);
        };
        job.run(events, 50ms);
      }
      QCOMPARE(seen, 2);
      for (pid_t rank : ranks) {
        QVERIFY(getpgid(rank) != getpgid(0) || !process_alive(rank));
        QTRY_VERIFY_WITH_TIMEOUT(!process_alive(rank), 5000);
      }
    }
  }

  void testDestroyedUnrunItKillsTheCommand() {
    pid_t pid = -1;
    const int fds_before = open_descriptors();
    {
      auto job = sh("sleep 30");
      job.start();
      pid = job.pid();
      QVERIFY(process_alive(pid));
    }
    QVERIFY(!process_alive(pid));  // killed and reaped, not a zombie
    QCOMPARE(open_descriptors(), fds_before);
  }

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
  }

  void testEndWatchdogStartsAtTheFirstEndAfterTrainingAndNamesTheStuckRanks() {
    const auto t0 = WatchdogClock::now();
    EndWatchdog w(60s, 4);
    w.rank_ended(0, t0);  // before training is done: no clock yet
    QVERIFY(!w.expired(t0 + 1h));
    w.training_done();
    w.rank_ended(1, t0 + 10s);
    w.rank_ended(3, t0 + 20s);
    QVERIFY(!w.expired(t0 + 69s));
    const auto why = w.expired(t0 + 70s);
    QVERIFY(why);
    QVERIFY2(why->find("rank 2 never reported its end") != std::string::npos, why->c_str());
    QVERIFY(!w.expired(t0 + 2h));

    EndWatchdog all(1s, 2);
    all.training_done();
    all.rank_ended(0, t0);
    all.rank_ended(1, t0);
    const auto shutdown = all.expired(t0 + 1s);
    QVERIFY(shutdown && shutdown->find("stuck in MPI's shutdown") != std::string::npos);

    EndWatchdog failed(1s, 2);
    failed.training_done();
    failed.rank_ended(0, t0);
    failed.rank_failed();
    QVERIFY(!failed.expired(t0 + 1h));
  }

  void testMalformedLimitIsRefusedNamingIt() {
    qputenv("DDPSCOPE_START_TIMEOUT_MS", "3m");
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, WatchdogLimits::from_environment());
    qputenv("DDPSCOPE_START_TIMEOUT_MS", "2500");
    QCOMPARE(WatchdogLimits::from_environment().start_timeout, 2500ms);
    qunsetenv("DDPSCOPE_START_TIMEOUT_MS");
    QCOMPARE(WatchdogLimits::from_environment().start_timeout, 180000ms);
  }

  void testMpirunsWordsNameTheRank() {
    const std::deque<std::string> fatal = {"noise", "*** An error occurred in MPI_Allreduce",
                                           "*** reported by process [579076097,1]",
                                           "*** MPI_ERR_TRUNCATE: message truncated"};
    const auto [rank, text] = mpi_fatal_error(fatal);
    QCOMPARE(rank, 1);
    QVERIFY2(text.rfind("MPI_Allreduce failed on rank 1: MPI_ERR_TRUNCATE", 0) == 0 &&
                 text.find("DDPSCOPE_DEBUG=detail") != std::string::npos,
             text.c_str());
    QCOMPARE(mpi_fatal_error({"*** An error occurred in MPI_Allreduce"}).first, -1);  // no rank: no verdict
    const auto [dead, line] =
        rank_death({"x", "mpirun noticed that process rank 3 with PID 7 exited on signal 9", "y"});
    QCOMPARE(dead, 3);
    QVERIFY(line.find("signal 9") != std::string::npos);
    QCOMPARE(rank_death({"nothing here"}).first, -1);
  }
};

QTEST_GUILESS_MAIN(TestProcessSupervisor)
#include "tst_process_supervisor.moc"
