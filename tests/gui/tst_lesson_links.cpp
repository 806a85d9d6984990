// Lessons as files and links to a step (issue 33): a lesson file made by
// `ddpscope-cli lesson make` from a real recording round-trips and replays with its stops
// and narration; a link copied from one window opens the same lesson, step, side by side,
// predict mode and zoom in a fresh one, and in a fresh app from a shell; links and lesson
// files that cannot be opened are refused, saying what is wrong and what to do.
#include <QtTest/QtTest>
#include <sys/stat.h>

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QTemporaryDir>

#include "graph_view.h"
#include "learn_page.h"
#include "lesson_player.h"
#include "lesson_catalog.h"
#include "lesson_file.h"
#include "lesson_link.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"

using namespace ddpscope::gui;
using ddpscope::probes::LessonFile;

namespace {

const QString kLessons = QStringLiteral(DDPSCOPE_LESSONS_DIR);

struct Cli {
  int code = -1;
  QString out;
};

Cli runCli(const QStringList& args) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(QStringLiteral(DDPSCOPE_CLI_PATH), args);
  p.waitForFinished(60000);
  return {p.exitCode(), QString::fromUtf8(p.readAll())};
}

// What a student sees of the lesson: which one, where, and how it is shown.
struct Seen {
  QString box;
  size_t applied = 0;
  bool side = false, predict = false;
  double zoom = 0;
  QString explanation;
};

Seen seen(MainWindow& w) {
  LearnPage* p = w.part<LearnPage>();
  return {p->lessonBox()->currentText(), p->applied(),       p->sideBySideBox()->isChecked(),
          p->predictBox()->isChecked(),  p->graph()->zoom(), p->explanation()->text()};
}

}  // namespace

class TestLessonLinks : public QObject {
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

  void testLinksRoundTripAndBadOnesAreRefused() {
    LessonLink file;
    file.source = LessonLink::Source::File;
    file.path = "/home/a teacher/50% & more #1/ring.ddplesson";
    file.step = 17;
    file.predict = true;
    file.zoom = 1.5;
    QString error;
    QCOMPARE(LessonLink::parse(file.toString(), 6, &error), std::optional<LessonLink>(file));
    LessonLink builtin;
    builtin.lesson = 3;
    builtin.step = 40;
    builtin.sideBySide = true;
    QCOMPARE(builtin.toString(), QString("ddpscope:learn?lesson=4&step=40&side=1"));
    QCOMPARE(LessonLink::parse(builtin.toString(), 6, &error), std::optional<LessonLink>(builtin));
    const QList<QPair<QString, QString>> bad = {
        {"https://example.com/learn?lesson=1", "not a ddpscope link"},
        {"ddpscope:timeline?lesson=1", "links to the Learn tab"},
        {"ddpscope:learn?lesson=99", "from 1 to 6"},
        {"ddpscope:learn?lesson=1&file=/a.ddplesson", "one lesson"},
        {"ddpscope:learn?file=rel/a.ddplesson", "not an absolute path"},
        {"ddpscope:learn?file=/etc/passwd", "not a .ddplesson file"},
        {"ddpscope:learn?run=/tmp/x.ddprun&step=-1", "step"},
        {"ddpscope:learn?lesson=1&zoom=1e9", "zoom"},
        {"ddpscope:learn?lesson=1&zoom=nan", "zoom"},
        {"ddpscope:learn?lesson=1&zoom=inf", "zoom"},
        {"ddpscope:learn?lesson=1&zoom=-nan", "zoom"},
        {"ddpscope:learn?lesson=1&step=1e99", "step"},
    };
    for (const auto& [text, why] : bad) {
      QVERIFY2(!LessonLink::parse(text, 6, &error), qPrintable(text));
      QVERIFY2(error.contains(why), qPrintable(text + " -> " + error));
    }
  }

  // Copied in one window, opened in a fresh one: the same lesson, step and view.
  void testALinkOpensTheSameStepInAFreshWindow() {
    QTemporaryDir dir;
    QString link;
    Seen there;
    {
      MainWindow a(dir.path());
      a.resize(1280, 800);
      a.show();
      QVERIFY(a.openLesson(1));  // 2a: FAST on an unused RPC, with its SMART twin beside it
      LearnPage* page = a.part<LearnPage>();
      for (int i = 0; i < 12; ++i)
        page->stepForward();
      page->sideBySideBox()->setChecked(true);
      page->graph()->setZoom(1.5);
      page->predictBox()->setChecked(true);
      link = a.part<LearnPage>()->copyLinkToStep();
      QCOMPARE(QApplication::clipboard()->text(), link);
      there = seen(a);
    }
    QVERIFY2(link.startsWith("ddpscope:learn?lesson=2&step=12&side=1&predict=1&zoom=1.5"), qPrintable(link));
    MainWindow b(dir.path());
    b.resize(1280, 800);
    b.show();
    QString error;
    QVERIFY2(b.openLink(link, &error), qPrintable(error));
    const Seen here = seen(b);
    QCOMPARE(here.box, there.box);
    QCOMPARE(here.applied, size_t{12});
    QCOMPARE(here.side, true);
    QCOMPARE(here.predict, true);
    QCOMPARE(here.zoom, 1.5);
    QCOMPARE(here.explanation, there.explanation);
    QCOMPARE(b.part<QTabWidget>("tabs")->currentIndex(), b.tabIndex("learn"));
  }

  // A lesson file made by the CLI from a real recording: its stops halt Play, its
  // narration replaces the step's words, and a link to it opens it again.
  void testALessonFileMadeByTheCliReplaysWithItsStopsAndNarration() {
    QTemporaryDir dir;
    const QString run = dir.filePath("my job.ddprun");
    QVERIFY(QFile::copy(kLessons + "/ddp-buckets.ddprun", run));
    const Cli made = runCli({"lesson", "make", run, "--title", "Buckets, my way", "--stop", "10", "--narrate",
                             "5:The fifth step, in my words."});
    QVERIFY2(made.code == 0, qPrintable(made.out));
    const QString lesson = dir.filePath("my job.ddplesson");
    QVERIFY(QFileInfo::exists(lesson));
    // The CLI refuses what it cannot make.
    QVERIFY(runCli({"lesson", "make", run}).out.contains("--force replaces it"));
    QVERIFY(runCli({"lesson", "make", run, "--rank", "7", "--force"}).out.contains("the run has 2 ranks, 0 to 1"));
    QVERIFY(runCli({"lesson", "make", run, "--narrate", "five:x", "--force"}).out.contains("expected STEP:TEXT"));

    MainWindow window(dir.path());
    window.resize(1280, 800);
    window.show();
    QVERIFY(window.openLessonFile(lesson));
    LearnPage* page = window.part<LearnPage>();
    QVERIFY(page->lesson().ddp);
    QCOMPARE(page->lessonBox()->currentText(), QString("Buckets, my way"));
    QCOMPARE(page->stops(), std::vector<int>{10});
    // No example to record again, no twin to show beside it.
    QVERIFY(!page->sideBySideBox()->isEnabled());
    QString refused;
    QVERIFY(!page->runLive(&refused));
    QVERIFY2(refused.contains("lesson of the Learn menu"), qPrintable(refused));
    page->player()->setStepsPerSecond(200);
    page->setPlaying(true);
    QTRY_VERIFY_WITH_TIMEOUT(!page->isPlaying(), 5000);
    QCOMPARE(page->applied(), size_t{10});  // stopped at the lesson's stop, not the end
    page->toStart();
    for (int i = 0; i < 5; ++i)
      page->stepForward();
    QCOMPARE(page->explanation()->text(), QString("The fifth step, in my words."));
    page->stepForward();
    QVERIFY(page->explanation()->text() != QString("The fifth step, in my words."));
    const QString link = window.part<LearnPage>()->copyLinkToStep();
    QVERIFY2(link.startsWith("ddpscope:learn?file="), qPrintable(link));
    MainWindow fresh(dir.path());
    QString error;
    QVERIFY2(fresh.openLink(link, &error), qPrintable(error));
    QCOMPARE(fresh.part<LearnPage>()->applied(), size_t{6});
    QCOMPARE(fresh.part<LearnPage>()->lessonBox()->currentText(), QString("Buckets, my way"));
    // A link to a lesson the receiver does not have says so and what to do.
    QFile::remove(lesson);
    QVERIFY(!fresh.openLink(link, &error));
    QVERIFY2(error.contains("not on this machine") && error.contains("ask whoever sent it"), qPrintable(error));
  }

  // From a shell, as the desktop entry opens a link: the app starts on that step.
  void testTheAppOpensALinkFromTheShell() {
    QTemporaryDir dir;
    const QString png = dir.filePath("shot.png");
    QProcess app;
    app.setProcessChannelMode(QProcess::MergedChannels);
    app.start(QStringLiteral(DDPSCOPE_APP_PATH),
              {"--open-link", "ddpscope:learn?lesson=4&step=20", "--size", "1280x800", "--screenshot", png});
    QVERIFY(app.waitForFinished(60000));
    QVERIFY2(app.exitCode() == 0, app.readAll().constData());
    QVERIFY(!QImage(png).isNull());
    app.start(QStringLiteral(DDPSCOPE_APP_PATH), {"--open-link", "ddpscope:learn?lesson=0", "--screenshot", png});
    QVERIFY(app.waitForFinished(60000));
    QCOMPARE(app.exitCode(), 2);
    QVERIFY2(QString::fromUtf8(app.readAll()).contains("--open-link: the link's lesson"), "no reason given");
  }
};

QTEST_MAIN(TestLessonLinks)
#include "tst_lesson_links.moc"
