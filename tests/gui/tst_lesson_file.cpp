// Lesson files (a lesson, its stops and narration beside its run): written and read back
// whole, bad ones refused with what was wrong, one without its run said with what to do,
// and files that never end (a pipe, a link to /dev/zero) refused before they are opened.
#include <QtTest/QtTest>

#include "lesson_links_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::LessonFile;
using namespace ddpscope::gui::lesson_links_fixture;

class TestLessonFile : public LessonLinksTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void testALessonFileRoundTrips() {
    QTemporaryDir dir;
    LessonFile l;
    l.title = "Buckets, slowly";
    l.run = "job.ddprun";
    l.kind = "ddp";
    l.rank = 1;
    l.about = "Watch bucket 0.";
    l.stops = {3, 10};
    l.narration = {{3, "Here the first bucket fills."}, {10, "Now finalize waits."}};
    const std::string path = dir.filePath("a.ddplesson").toStdString();
    ddpscope::probes::write_lesson_file(path, l);
    QCOMPARE(ddpscope::probes::read_lesson_file(path), l);
    QCOMPARE(QString::fromStdString(ddpscope::probes::lesson_run_path(path, l)), dir.filePath("job.ddprun"));
  }

  void testBadLessonFilesAreRefused_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("said");
    QTest::newRow("not JSON") << QByteArray("{ title: x") << "not JSON";
    QTest::newRow("another format") << QByteArray(R"({"format": "x", "version": 1})") << "not a lesson file";
    QTest::newRow("newer version") << QByteArray(R"({"format": "ddpscope-lesson", "version": 9})") << "update ddpscope";
    QTest::newRow("no run") << QByteArray(R"({"format": "ddpscope-lesson", "version": 1, "title": "t"})")
                            << "no \"run\"";
    QTest::newRow("stop 0") << QByteArray(
                                   R"({"format": "ddpscope-lesson", "version": 1, "title": "t", "run": "r.ddprun",
                                "stops": [0]})")
                            << "step number from 1";
    QTest::newRow("narration key") << QByteArray(R"({"format": "ddpscope-lesson", "version": 1, "title": "t",
                                       "run": "r.ddprun", "narration": {"x": "y"}})")
                                   << "not a step number";
    QTest::newRow("kind") << QByteArray(R"({"format": "ddpscope-lesson", "version": 1, "title": "t", "run": "r.ddprun",
                              "kind": "rpc"})")
                          << "\"ddp\" or \"ring\"";
  }

  void testBadLessonFilesAreRefused() {
    QFETCH(QByteArray, text);
    QFETCH(QString, said);
    QTemporaryDir dir;
    QFile f(dir.filePath("bad.ddplesson"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    MainWindow window(dir.path());
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.openLessonFile(f.fileName()));
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed.at(0).at(0).toString().contains(said), qPrintable(failed.at(0).at(0).toString()));
  }

  // A lesson file whose run is not beside it: said, with what to do.
  void testALessonFileWithoutItsRunIsRefused() {
    QTemporaryDir dir;
    LessonFile l;
    l.title = "moved";
    l.run = "gone.ddprun";
    const QString path = dir.filePath("moved.ddplesson");
    ddpscope::probes::write_lesson_file(path.toStdString(), l);
    MainWindow window(dir.path());
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.openLessonFile(path));
    QCOMPARE(failed.size(), 1);
    const QString said = failed.at(0).at(0).toString();
    QVERIFY2(said.contains(dir.filePath("gone.ddprun")) && said.contains("keep the run file beside the lesson file"),
             qPrintable(said));
  }

  // A lesson file that never ends is refused before it is opened, in the app and when a
  // link (a classroom's teacher's) names one: a pipe, and a symlink to /dev/zero, which
  // grew a student's app to 8.2 GB (issue 49).
  void testLessonFilesThatNeverEndAreRefused() {
    QTemporaryDir dir;
    const QString fifo = dir.filePath("pipe.ddplesson"), zero = dir.filePath("zero.ddplesson");
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    QVERIFY(QFile::link("/dev/zero", zero));
    for (const QString& path : {fifo, zero}) {
      bool refused = false;
      try {
        ddpscope::probes::read_lesson_file(path.toStdString());
      } catch (const std::exception& e) {
        refused = QString(e.what()).contains("not a regular file, and would never end: not a lesson file");
      }
      QVERIFY2(refused, qPrintable(path));
      MainWindow window(dir.path());
      QSignalSpy failed(&window, &MainWindow::loadFailed);
      QElapsedTimer clock;
      clock.start();
      QVERIFY(!window.openPath(path));
      QVERIFY(!window.openPath("ddpscope:learn?file=" + QUrl::toPercentEncoding(path)));
      QVERIFY(clock.elapsed() < 5000);
      QCOMPARE(failed.size(), 2);
      QVERIFY2(failed.at(0).at(0).toString().contains(path.endsWith("pipe.ddplesson") ? "is a pipe" : "is a device"),
               qPrintable(failed.at(0).at(0).toString()));
    }
    // A run file that is a pipe: refused as well, never blocking.
    const QString runPipe = dir.filePath("pipe.ddprun");
    QCOMPARE(::mkfifo(runPipe.toLocal8Bit().constData(), 0600), 0);
    MainWindow window(dir.path());
    QSignalSpy failed(&window, &MainWindow::loadFailed);
    QVERIFY(!window.openPath(runPipe));
    QVERIFY(failed.at(0).at(0).toString().contains("is a pipe"));
  }
};

DDPSCOPE_TEST_MAIN(TestLessonFile)
#include "tst_lesson_file.moc"
