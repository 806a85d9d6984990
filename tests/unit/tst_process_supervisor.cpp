// The launcher's supervisor, in one process with real child processes (/bin/sh): lines
// arrive as events from both streams with the exit code, a program that cannot run exits
// 127 saying why, stop() ends a command that ignores SIGTERM once the grace has passed
// (an earlier deadline holds), our signals arrive as events, and a supervisor destroyed
// before it ran kills the command.
#include <QtTest/QtTest>

#include "process_fixture.h"
#include "test_registry.h"

using namespace ddpscope::apps;
using namespace std::chrono_literals;
using namespace ddpscope::testing::process_fixture;

class TestProcessSupervisor : public ProcessTest {
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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestProcessSupervisor)
#include "tst_process_supervisor.moc"
