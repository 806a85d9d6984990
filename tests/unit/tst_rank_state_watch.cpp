// The launcher's look at its ranks' processes (engine/apps/rank_state_watch.h), on real child
// processes and a real run file: a rank stopped by SIGSTOP is seen stopped, one that runs is
// seen sleeping or running; once frozen (the job is being ended) the states stay as they were
// seen, though mpirun then continues and ends the stopped rank; a rank of another host is not
// looked at, and a run file not yet made is no error.
#include <QtTest/QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rank_state_watch.h"
#include "run_store_writer.h"
#include "sqlite_db.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace std::chrono_literals;

namespace {

pid_t sleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;)
      pause();
  }
  return pid;
}

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// A rank's row as the collector writes it when the rank joins: its host and pid.
void add_rank(const std::string& run, int rank, const std::string& host, pid_t pid) {
  probes::SqliteDb db(run, SQLITE_OPEN_READWRITE);
  probes::Statement s = db.prepare("INSERT INTO ranks(rank, host, pid) VALUES(?, ?, ?)");
  s.bind(1, int64_t{rank}).bind(2, host).bind(3, int64_t{pid});
  s.step();
}

void wait_for_state(pid_t pid, char want) {
  for (int i = 0; i < 200; ++i) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
    QFile f(path);
    if (f.open(QIODevice::ReadOnly) && f.readAll().contains(QByteArray(") ") + want)) return;
    QThread::msleep(10);
  }
}

}  // namespace

class TestRankStateWatch : public QObject {
  Q_OBJECT

 private slots:
  void testAStoppedRankIsSeenStoppedAndKeptOnceFrozen() {
    QTemporaryDir dir;
    const std::string run = dir.filePath("job.ddprun").toStdString();
    const pid_t running = sleeper(), stopped = sleeper();
    {
      probes::RunStoreWriter w(run);
      w.begin_run({R"({"model":"mlp"})", 3, "mpi", "mlp"});
    }
    add_rank(run, 0, this_host(), running);
    add_rank(run, 1, this_host(), stopped);
    add_rank(run, 2, "another-host", stopped);
    kill(stopped, SIGSTOP);
    wait_for_state(stopped, 'T');
    apps::RankStateWatch watch(run, 3);
    const auto t0 = apps::WatchdogClock::now();
    watch.poll(t0);
    QCOMPARE(watch.states().at(1), std::string("T"));
    QVERIFY(watch.states().at(0) == "S" || watch.states().at(0) == "R");
    QCOMPARE(watch.states().count(2), size_t{0});  // another host's process is not looked at
    // Continued: the next look (500 ms on) sees it sleep.
    kill(stopped, SIGCONT);
    wait_for_state(stopped, 'S');
    watch.poll(t0 + 100ms);
    QCOMPARE(watch.states().at(1), std::string("T"));  // too soon to look again
    watch.poll(t0 + 600ms);
    QCOMPARE(watch.states().at(1), std::string("S"));
    // Stopped again, and the job is ended: mpirun continues and kills it, which changes nothing,
    // also when it continued the rank before the launcher's last look (a loaded machine).
    kill(stopped, SIGSTOP);
    wait_for_state(stopped, 'T');
    watch.poll(t0 + 1200ms);
    QCOMPARE(watch.states().at(1), std::string("T"));
    kill(stopped, SIGCONT);
    wait_for_state(stopped, 'S');
    watch.freeze();
    kill(stopped, SIGCONT);
    kill(stopped, SIGKILL);
    waitpid(stopped, nullptr, 0);
    watch.poll(t0 + 10s);
    QCOMPARE(watch.states().at(1), std::string("T"));
    kill(running, SIGKILL);
    waitpid(running, nullptr, 0);
  }

  // A gone process keeps the last state seen alive; a run file not made yet is no error.
  void testAGoneRankKeepsItsLastStateAndNoFileIsNoError() {
    QTemporaryDir dir;
    const std::string run = dir.filePath("job.ddprun").toStdString();
    apps::RankStateWatch early(run, 1);
    early.poll(apps::WatchdogClock::now());
    QVERIFY(early.states().empty());
    const pid_t pid = sleeper();
    {
      probes::RunStoreWriter w(run);
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
    }
    add_rank(run, 0, this_host(), pid);
    apps::RankStateWatch watch(run, 1);
    const auto t0 = apps::WatchdogClock::now();
    watch.poll(t0);
    QVERIFY(watch.states().count(0) == 1);
    const std::string alive = watch.states().at(0);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    watch.poll(t0 + 1s);
    QCOMPARE(watch.states().at(0), alive);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRankStateWatch)
#include "tst_rank_state_watch.moc"
