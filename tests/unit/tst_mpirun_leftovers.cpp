// What a killed mpirun leaves on this host (mpirun_leftovers.h): its session directory and its
// job family's shared-memory segments are removed, nothing of another job, user or family,
// and nothing where the session directory is gone, does not say its family, or is a link.
#include <QtTest/QtTest>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mpirun_leftovers.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::apps;
namespace fs = std::filesystem;

class TestMpirunLeftovers : public ScratchTest {
  Q_OBJECT

  static void write(const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }

  // A session directory as OpenMPI 4.1 leaves it, for mpirun `pid` of job family `family`.
  static fs::path session(const fs::path& tmp, const std::string& node, int pid, long long family) {
    const fs::path dir = tmp / ("ompi." + node + "." + std::to_string(getuid())) / ("pid." + std::to_string(pid));
    write(dir / "contact.txt", std::to_string(family << 16) + ".0;tcp://192.0.2.2:36791;tcp6://[fd00::2]:40901\n" +
                                   std::to_string(pid) + "\n");
    write(dir / "1" / "0" / "debugger_attach_fifo", "");
    write(dir / ("pmix_dstor_ds21_" + std::to_string(pid)) / "initial-pmix_shared-segment-0", std::string(4096, 'x'));
    return dir;
  }

  static std::string segment(const std::string& node, uid_t uid, const std::string& job, int rank) {
    return "vader_segment." + node + "." + std::to_string(uid) + "." + job + "." + std::to_string(rank);
  }

 private slots:
  void testTheKilledJobsDirectoryAndSegmentsAreRemoved() {
    const fs::path tmp = path("tmp"), shm = path("shm");
    const uid_t me = getuid();
    const fs::path ours = session(tmp, "vm", 4242, 0x46d4);
    const fs::path others = session(tmp, "vm", 4343, 0x46d5);  // another job, still running
    const std::vector<std::string> gone = {segment("vm", me, "46d40001", 0), segment("vm", me, "46d40001", 1),
                                           segment("vm", me, "46d40002", 0)};     // a job it spawned
    const std::vector<std::string> kept = {segment("vm", me, "46d50001", 0),      // the other job's
                                           segment("vm", me + 1, "46d40001", 0),  // another user's
                                           segment("vm2", me, "46d40001", 0),     // another node name
                                           "vader_segment.vm." + std::to_string(me) + ".46d40001.x",
                                           "vader_segment.vm." + std::to_string(me) + ".zz.0",
                                           "unrelated"};
    for (const auto& name : gone)
      write(shm / name, std::string(8192, 's'));
    for (const auto& name : kept)
      write(shm / name, "s");

    const MpirunLeftovers removed = remove_mpirun_leftovers(4242, shm.string(), tmp.string());
    QCOMPARE(removed.removed.size(), gone.size() + 1);
    QCOMPARE(removed.removed.back(), ours.string());
    QVERIFY2(removed.bytes >= 3 * 8192 + 4096, qPrintable(QString::number(removed.bytes)));
    QVERIFY(!fs::exists(ours));
    QVERIFY(fs::exists(ours.parent_path()));  // OpenMPI's per-user directory stays
    QVERIFY(fs::exists(others / "contact.txt"));
    for (const auto& name : gone)
      QVERIFY2(!fs::exists(shm / name), name.c_str());
    for (const auto& name : kept)
      QVERIFY2(fs::exists(shm / name), name.c_str());

    // Again: nothing is left to remove, and nothing else goes.
    QVERIFY(remove_mpirun_leftovers(4242, shm.string(), tmp.string()).removed.empty());
    for (const auto& name : kept)
      QVERIFY2(fs::exists(shm / name), name.c_str());
  }

  // A session directory whose contact file is missing or says something else names no
  // family: it and every segment stay (they may be a newer OpenMPI's, named otherwise).
  void testADirectoryThatNamesNoFamilyIsLeft() {
    const fs::path tmp = path("tmp2"), shm = path("shm2");
    const fs::path dir = session(tmp, "vm", 5151, 0x46d4);
    write(dir / "contact.txt", "not a contact\n");
    write(shm / segment("vm", getuid(), "46d40001", 0), "s");
    QVERIFY(remove_mpirun_leftovers(5151, shm.string(), tmp.string()).removed.empty());
    QVERIFY(fs::exists(dir));
    QVERIFY(fs::exists(shm / segment("vm", getuid(), "46d40001", 0)));
    // And no directory for the pid at all: nothing.
    QVERIFY(remove_mpirun_leftovers(5252, shm.string(), tmp.string()).removed.empty());
  }

  // A job family is 16 bits of a hash of the node and mpirun's pid: a running job (this
  // process stands for its mpirun) may share the killed one's, and keeps its segments; the
  // killed one's directory still goes.
  void testARunningJobOfTheSameFamilyKeepsItsSegments() {
    const fs::path tmp = path("tmp4"), shm = path("shm4");
    const fs::path dead = session(tmp, "vm", 7171, 0x46d4);
    const fs::path running = session(tmp, "vm", static_cast<int>(getpid()), 0x46d4);
    write(shm / segment("vm", getuid(), "46d40001", 0), "s");
    const MpirunLeftovers removed = remove_mpirun_leftovers(7171, shm.string(), tmp.string());
    QCOMPARE(removed.removed, std::vector<std::string>{dead.string()});
    QVERIFY(fs::exists(running / "contact.txt"));
    QVERIFY(fs::exists(shm / segment("vm", getuid(), "46d40001", 0)));
  }

  // A link under a session directory's name (anyone may make one in a shared /tmp) is not
  // followed: what it points to stays, and so do the segments.
  void testALinkIsNotFollowed() {
    const fs::path tmp = path("tmp3"), shm = path("shm3"), elsewhere = path("elsewhere");
    const fs::path real = session(elsewhere, "vm", 6161, 0x46d4);
    const fs::path top = tmp / ("ompi.vm." + std::to_string(getuid()));
    fs::create_directories(top);
    fs::create_directory_symlink(real, top / "pid.6161");
    write(shm / segment("vm", getuid(), "46d40001", 0), "s");
    QVERIFY(remove_mpirun_leftovers(6161, shm.string(), tmp.string()).removed.empty());
    QVERIFY(fs::exists(real / "contact.txt"));
    QVERIFY(fs::exists(shm / segment("vm", getuid(), "46d40001", 0)));
  }

  void testTheTemporaryDirectoryIsOpenMpisOwn() {
    const QByteArray saved[] = {qgetenv("OMPI_MCA_orte_tmpdir_base"), qgetenv("TMPDIR"), qgetenv("TEMP"),
                                qgetenv("TMP")};
    const char* names[] = {"OMPI_MCA_orte_tmpdir_base", "TMPDIR", "TEMP", "TMP"};
    qputenv("OMPI_MCA_orte_tmpdir_base", "/scratch/a");
    qputenv("TMPDIR", "/scratch/b");
    QCOMPARE(openmpi_tmpdir_base(), std::string("/scratch/a"));
    qunsetenv("OMPI_MCA_orte_tmpdir_base");
    QCOMPARE(openmpi_tmpdir_base(), std::string("/scratch/b"));
    qunsetenv("TMPDIR");
    qunsetenv("TEMP");
    qunsetenv("TMP");
    QCOMPARE(openmpi_tmpdir_base(), std::string("/tmp"));
    for (int i = 0; i < 4; ++i)
      if (!saved[i].isEmpty()) qputenv(names[i], saved[i]);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestMpirunLeftovers)
#include "tst_mpirun_leftovers.moc"
