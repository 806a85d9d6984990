// AtomicFile (probes/store/atomic_file.h): a file a user names appears whole or not at all. The
// helper alone (commit, no commit, a stale partial file, a rename that fails), then the
// writers built on it when the rename fails: a flight-dump import, whose failed rename
// left "RUN.importing" behind before, and a lesson file.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <filesystem>
#include <fstream>

#include "atomic_file.h"
#include "flight_import.h"
#include "lesson_file.h"
#include "test_registry.h"

using ddpscope::probes::AtomicFile;
namespace fs = std::filesystem;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every name in `dir` (what a failure might have left).
QStringList names(const QString& dir) { return QDir(dir).entryList(QDir::NoDotAndDotDot | QDir::AllEntries); }

}  // namespace

class TestAtomicFile : public QObject {
  Q_OBJECT

 private slots:
  void testCommitMovesTheWholeFileIntoPlace() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("out.json").toStdString();
    write(path, "old");
    AtomicFile file(path);
    write(file.partial(), "new");
    QCOMPARE(read(path), std::string("old"));  // readers see the old file until the end
    file.commit();
    QCOMPARE(read(path), std::string("new"));
    QCOMPARE(names(dir.path()), QStringList{"out.json"});
  }

  void testWithoutCommitNothingIsLeft() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("run.ddprun").toStdString();
    write(path, "old");
    {
      AtomicFile file(path, ".importing");
      for (const char* name : {"", "-wal", "-shm", "-journal"})
        write(file.partial() + name, "half");
    }  // an exception on the way: never committed
    QCOMPARE(names(dir.path()), QStringList{"run.ddprun"});
    QCOMPARE(read(path), std::string("old"));
  }

  void testAStalePartialFileIsRemoved() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("trace.json").toStdString();
    write(path + ".partial", "left by a crash");
    AtomicFile file(path);
    QVERIFY(!fs::exists(file.partial()));
  }

  void testAFailedRenameSaysWhereAndLeavesNothing() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("taken").toStdString();
    fs::create_directories(path + "/inside");  // a folder with something in it: rename cannot replace it
    AtomicFile file(path);
    write(file.partial(), "whole");
    try {
      file.commit();
      QFAIL("commit over a non-empty folder succeeded");
    } catch (const std::exception& e) {
      QVERIFY2(QString(e.what()).contains(QString::fromStdString("'" + path + "'")), e.what());
    }
    QCOMPARE(names(dir.path()), QStringList{"taken"});
  }

  // The flight import renamed outside its cleanup: a failed rename left RUN.importing.
  void testAFlightImportThatCannotMoveItsRunLeavesNothing() {
    QTemporaryDir dir;
    const std::string out = dir.filePath("run.ddprun").toStdString();
    fs::create_directories(out + "/inside");
    const std::string dumps = std::string(DDPSCOPE_SOURCE_DIR) + "/tests/torch/fixtures/flight_4_ranks";
    std::vector<std::string> paths;
    for (const auto& entry : fs::directory_iterator(dumps))
      paths.push_back(entry.path().string());
    QVERIFY(!paths.empty());
    QVERIFY_THROWS_EXCEPTION(std::exception, ddpscope::probes::import_flight_dumps(paths, out, true));
    QCOMPARE(names(dir.path()), QStringList{"run.ddprun"});
    QVERIFY(fs::is_directory(out + "/inside"));
  }

  void testALessonFileThatCannotBeMovedLeavesNothing() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("lesson.ddplesson").toStdString();
    fs::create_directories(path + "/inside");
    ddpscope::probes::LessonFile lesson;
    lesson.title = "t";
    lesson.run = "run.ddprun";
    QVERIFY_THROWS_EXCEPTION(std::exception, ddpscope::probes::write_lesson_file(path, lesson));
    QCOMPARE(names(dir.path()), QStringList{"lesson.ddplesson"});
  }
};

DDPSCOPE_TEST_MAIN(TestAtomicFile)
#include "tst_atomic_file.moc"
