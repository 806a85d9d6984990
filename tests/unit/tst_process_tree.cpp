// The process tree of a supervised command: no process of its group outlives the
// supervisor, and processes that left for groups of their own below the command end
// with it.
#include <QtTest/QtTest>

#include "process_fixture.h"
#include "test_registry.h"

using namespace ddpscope::apps;
using namespace std::chrono_literals;
using namespace ddpscope::testing::process_fixture;

class TestProcessTree : public ProcessTest {
  Q_OBJECT

 private slots:

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
      uint64_t started[2] = {0, 0};
      int seen = 0;
      {
        auto job = sh(std::string("setsid sleep 30 & echo $!; setsid sleep 30 & echo $!; ") +
                      (exits ? "sleep 0.8; exit 0" : "trap '' TERM; sleep 30"));
        job.start();
        ProcessSupervisor::Events events;
        events.stdout_line = [&](const std::string& l) {
          if (seen >= 2) return;
          ranks[seen] = std::stoi(l);
          started[seen] = start_ticks(ranks[seen]);
          ++seen;
        };
        events.tick = [&](auto) {
          if (!exits && seen == 2 && !job.stopping()) job.stop(300ms);
        };
        job.run(events, 50ms);
      }
      QCOMPARE(seen, 2);
      for (int i = 0; i < 2; ++i) {
        const pid_t rank = ranks[i];
        QVERIFY(getpgid(rank) != getpgid(0) || !same_process_alive(rank, started[i]));
        QTRY_VERIFY2_WITH_TIMEOUT(!same_process_alive(rank, started[i]),
                                  qPrintable(QString("the job %1; still running: %2")
                                                 .arg(exits ? "exited" : "was stopped")
                                                 .arg(QString::fromStdString(stat_line(rank)))),
                                  5000);
      }
    }
  }

  // The launcher looks at every tick while a job starts: a look reads the stat of the pids it
  // has not seen (and every pid again once refresh_every has passed), yet finds a process
  // started since, in a group of its own too.
  void testALookReadsOnlyWhatItHasNotSeenAndFindsNewProcesses() {
    QProcess command;
    command.start("/bin/sh", {"-c", "setsid sleep 30 & read line; sleep 30 & wait"});
    QVERIFY(command.waitForStarted());
    const pid_t root = static_cast<pid_t>(command.processId());
    DescendantSurvey survey(root, std::chrono::hours(1));
    std::vector<ProcessId> found;
    QTRY_VERIFY_WITH_TIMEOUT((found = survey.look()).size() == 1, 5000);
    const uint64_t first_reads = survey.stats_read();
    QVERIFY(first_reads >= 2);  // every process, the machine's and the command's
    survey.look();
    const uint64_t second_reads = survey.stats_read() - first_reads;
    QVERIFY2(second_reads * 2 < first_reads,
             qPrintable(QString("a second look read %1 stat files, the first %2").arg(second_reads).arg(first_reads)));

    command.write("go\n");  // the command starts its second child now
    QTRY_VERIFY_WITH_TIMEOUT((found = survey.look()).size() == 2, 5000);

    // A survey that refreshes at every look reads every process each time.
    DescendantSurvey afresh(root, std::chrono::milliseconds(0));
    QCOMPARE(afresh.look().size(), size_t(2));
    const uint64_t once = afresh.stats_read();
    QCOMPARE(afresh.look().size(), size_t(2));
    QVERIFY(afresh.stats_read() - once + 10 >= once);

    QCOMPARE(kill_if_same(found), 2);
    command.waitForFinished(5000);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestProcessTree)
#include "tst_process_tree.moc"
