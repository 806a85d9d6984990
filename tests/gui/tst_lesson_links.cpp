// Links to a lesson's step opened: copied in one window and opened in a fresh one at the
// same lesson, step and view, and from a shell as the desktop entry opens one.
#include <QtTest/QtTest>

#include "lesson_links_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::LessonFile;
using namespace ddpscope::gui::lesson_links_fixture;

class TestLessonLinks : public LessonLinksTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

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

DDPSCOPE_TEST_MAIN(TestLessonLinks)
#include "tst_lesson_links.moc"
