// What the shared-memory transport asks of the system: a host key that is the same for
// every process of this host and network namespace and differs in another namespace (as
// the namespace cluster's hosts are); a sealed region another process can map, while
// memory that is not sealed, or too large, is refused by name; descriptors passed over a
// Unix socket; and the user at the other end.
#include <QtTest/QtTest>

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "ddpscope/error.h"
#include "rpc/shm_handshake.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;

class TestShmHandshake : public QObject {
  Q_OBJECT

 private slots:
  void testTheHostKeyIsPerNetworkNamespace() {
    const std::string here = shm::host_key();
    QVERIFY(!here.empty());
    QCOMPARE(shm::host_key(), here);
    int pipe_fds[2];
    QVERIFY(::pipe(pipe_fds) == 0);
    const pid_t child = ::fork();
    if (child == 0) {  // a new network namespace: a host of its own (needs root, as tests/cluster does)
      const std::string key = ::unshare(CLONE_NEWNET) == 0 ? shm::host_key() : "unshare refused";
      [[maybe_unused]] ssize_t n = ::write(pipe_fds[1], key.data(), key.size());
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    char buffer[512] = {};
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof(buffer) - 1);
    ::close(pipe_fds[0]);
    ::waitpid(child, nullptr, 0);
    const std::string there(buffer, static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (there == "unshare refused") QSKIP("no right to make a network namespace here");
    QVERIFY(!there.empty());
    QVERIFY2(there != here, there.c_str());
    // The same boot: only the namespace part differs.
    QCOMPARE(there.substr(0, 36), here.substr(0, 36));
  }

  void testARegionPassesToAnotherProcessAndBack() {
    shm::Region made = shm::make_region(8192);
    std::memcpy(made.base(), "written by the maker", 21);
    int pair[2];
    QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
    QVERIFY(shm::same_user(pair[0]));
    const pid_t child = ::fork();
    if (child == 0) {  // the other process: receives, maps, answers in the memory
      std::string payload;
      std::vector<int> fds;
      while (shm::receive_with_fds(pair[1], payload, fds) == 0)
        ::usleep(1000);
      if (payload != "hello" || fds.size() != 1) ::_exit(2);
      shm::Region mapped = shm::map_region(fds[0], 1 << 20);
      if (std::strcmp(static_cast<char*>(mapped.base()), "written by the maker") != 0) ::_exit(3);
      std::memcpy(static_cast<char*>(mapped.base()) + 4096, "and read back", 14);
      ::_exit(0);
    }
    QVERIFY(shm::send_with_fds(pair[0], "hello", {made.fd()}));
    int status = 0;
    ::waitpid(child, &status, 0);
    QVERIFY(WIFEXITED(status));
    QCOMPARE(WEXITSTATUS(status), 0);
    QCOMPARE(QString(static_cast<char*>(made.base()) + 4096), QString("and read back"));
    ::close(pair[0]);
    ::close(pair[1]);
  }

  void testMemoryThatIsNotASealedRingIsRefused() {
    const int unsealed = ::memfd_create("unsealed", MFD_CLOEXEC);
    QVERIFY(::ftruncate(unsealed, 8192) == 0);
    try {
      shm::map_region(unsealed, 1 << 20);
      QFAIL("mapped memory that can shrink under its reader");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("not a sealed ring"), e.what());
    }
    QVERIFY2(::fcntl(unsealed, F_GETFD) < 0, "a refused descriptor is closed");
    shm::Region big = shm::make_region(1 << 16);
    try {
      shm::map_region(::dup(big.fd()), 4096);
      QFAIL("mapped more than the limit");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("at most 4096"), e.what());
    }
  }

  void testReceivingSaysNothingYetAndClosed() {
    int pair[2];
    QVERIFY(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair) == 0);
    std::string payload;
    std::vector<int> fds;
    QCOMPARE(shm::receive_with_fds(pair[1], payload, fds), 0);
    QVERIFY(shm::send_with_fds(pair[0], "no descriptors", {}));
    QCOMPARE(shm::receive_with_fds(pair[1], payload, fds), 1);
    QCOMPARE(payload, std::string("no descriptors"));
    QVERIFY(fds.empty());
    ::close(pair[0]);
    QCOMPARE(shm::receive_with_fds(pair[1], payload, fds), -1);
    ::close(pair[1]);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestShmHandshake)
#include "tst_shm_handshake.moc"
