// Faults on purpose (DDPSCOPE_FAULT) for the fault suite: each action happens on the rank,
// iteration and phase named and nowhere else: a throw naming where, SIGKILL, SIGSEGV and
// SIGSTOP of the process itself, and the loss allreduce skipped or changed. The spec is
// read once per process, so each case runs in a child of its own.
#include <QtTest/QtTest>

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include <cstdlib>

#include "apps/fault_injection.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using namespace ddpscope::apps;

namespace {

enum Outcome { Returned = 10, ReturnedTrue = 11, Threw = 12, ThrewNamingWhere = 13 };

// Runs fault_point(phase, rank, iteration) in a child whose DDPSCOPE_FAULT is `spec`; the
// child's wait status.
int faultIn(const char* spec, const char* phase, int rank, int64_t iteration) {
  const pid_t child = fork();
  if (child == 0) {
    setenv("DDPSCOPE_FAULT", spec, 1);
    int code = Returned;
    try {
      code = fault_point(phase, rank, iteration) ? ReturnedTrue : Returned;
    } catch (const ddpscope::Error& e) {
      code = std::string(e.what()).find("injected fault (DDPSCOPE_FAULT) at iteration 5") != std::string::npos
                 ? ThrewNamingWhere
                 : Threw;
    }
    _exit(code);
  }
  int status = 0;
  waitpid(child, &status, WUNTRACED);
  if (WIFSTOPPED(status)) {
    kill(child, SIGKILL);
    int ignored = 0;
    waitpid(child, &ignored, 0);
  }
  return status;
}

bool exited(int status, int code) { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
bool signalled(int status, int sig) { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }

}  // namespace

class TestFaultInjection : public QObject {
  Q_OBJECT

 private slots:
  void testEachActionWhereItIsNamed() {
    QVERIFY(exited(faultIn("rank=1,iter=5", "iteration", 1, 5), ThrewNamingWhere));
    QVERIFY(signalled(faultIn("rank=1,iter=5,phase=backward,kill", "backward", 1, 5), SIGKILL));
    QVERIFY(signalled(faultIn("rank=1,iter=5,phase=allreduce,segv", "allreduce", 1, 5), SIGSEGV));
    const int stopped = faultIn("rank=1,iter=9,phase=end,stop", "end", 1, 9);
    QVERIFY(WIFSTOPPED(stopped) && WSTOPSIG(stopped) == SIGSTOP);
    for (const char* spec : {"rank=1,iter=5,phase=allreduce,skip", "rank=1,iter=5,phase=allreduce,wrong_op",
                             "rank=1,iter=5,phase=allreduce,wrong_size", "rank=1,iter=5,phase=allreduce,wrong_dtype"})
      QVERIFY2(exited(faultIn(spec, "allreduce", 1, 5), ReturnedTrue), spec);
  }

  void testNowhereElse() {
    QVERIFY(exited(faultIn("rank=1,iter=5,phase=backward,kill", "backward", 0, 5), Returned));  // another rank
    QVERIFY(exited(faultIn("rank=1,iter=5,phase=backward,kill", "backward", 1, 4), Returned));  // another iteration
    QVERIFY(exited(faultIn("rank=1,iter=5,phase=backward,kill", "forward", 1, 5), Returned));   // another phase
    QVERIFY(exited(faultIn("", "iteration", 1, 5), Returned));                                  // no fault
  }

  void testSkipOutsideTheLossAllreduceIsRefused() {
    QVERIFY(exited(faultIn("rank=1,iter=5,phase=forward,skip", "forward", 1, 5), Threw));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFaultInjection)
#include "tst_fault_injection.moc"
