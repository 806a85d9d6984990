// The app at first sight (issue 34), on real widgets (offscreen): what a newcomer meets
// on first clicks. The Learn tab, first shown, has the lesson its box names loaded, so
// Play and the arrow keys work at once.
#include <QtTest/QtTest>

#include <QComboBox>
#include <QTabWidget>
#include <QTemporaryDir>

#include "learn_page.h"
#include "main_window.h"

using namespace ddpscope::gui;

class TestFirstSight : public QObject {
  Q_OBJECT
 private slots:
  void testLearnTabIsReadyWhenFirstShown() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.resize(1280, 800);
    window.show();
    LearnPage* page = window.learnPage();
    QVERIFY(page->lesson().steps.empty());  // nothing loaded before the tab is opened
    window.showTab(QStringLiteral("learn"));
    QApplication::processEvents();
    QVERIFY(page->lesson().steps.size() > 20);
    QCOMPARE(page->lessonBox()->currentIndex(), 0);
    QTest::keyClick(page, Qt::Key_Right);
    QTest::keyClick(page, Qt::Key_Right);
    QCOMPARE(page->applied(), size_t{2});
    // Leaving and coming back keeps the student's place.
    window.showTab(QStringLiteral("summary"));
    window.showTab(QStringLiteral("learn"));
    QCOMPARE(page->applied(), size_t{2});
  }
};

QTEST_MAIN(TestFirstSight)
#include "tst_first_sight.moc"
