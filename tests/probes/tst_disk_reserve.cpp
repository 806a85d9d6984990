// Room kept for a run's last words: the reserve takes real blocks on the disk (not a
// sparse file), gives them back when released or destroyed, and a disk too small for it
// leaves no reserve and no file instead of an error.
#include <QtTest/QtTest>

#include <QFile>
#include <sys/stat.h>

#include "disk_reserve.h"
#include "scratch_test.h"
#include "test_registry.h"

using ddpscope::probes::DiskReserve;

namespace {

int64_t allocated_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? int64_t{st.st_blocks} * 512 : -1;
}

}  // namespace

class TestDiskReserve : public ScratchTest {
  Q_OBJECT

 private slots:
  void testTheReserveTakesRealBlocksAndGivesThemBack() {
    const std::string file = path("run.ddprun-reserve");
    {
      DiskReserve reserve(file, 4 << 20);
      QVERIFY(reserve.held());
      QVERIFY2(allocated_bytes(file) >= (4 << 20), qPrintable(QString::number(allocated_bytes(file))));
      reserve.release();
      QVERIFY(!reserve.held());
      QVERIFY(!QFile::exists(QString::fromStdString(file)));
    }
    {
      DiskReserve reserve(file, 1 << 20);
      QVERIFY(reserve.held());
    }
    QVERIFY(!QFile::exists(QString::fromStdString(file)));  // the destructor releases
  }

  void testNoRoomMeansNoReserveAndNoFile() {
    // No file system here holds an exabyte.
    const std::string file = path("huge-reserve");
    DiskReserve reserve(file, int64_t{1} << 60);
    QVERIFY(!reserve.held());
    QVERIFY(!QFile::exists(QString::fromStdString(file)));
    reserve.release();  // harmless
  }

  void testAFolderThatCannotBeWrittenHoldsNothing() {
    DiskReserve reserve("/nonexistent-folder/reserve", 1024);
    QVERIFY(!reserve.held());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestDiskReserve)
#include "tst_disk_reserve.moc"
