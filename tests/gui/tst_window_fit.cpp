// The main window's size on its screen: 1280x800 where there is room, less on a smaller
// screen with the frame and panels counted, never below 320x240; the frame a window gets
// before the window manager framed it; and the offscreen platform's preferred size.
#include <QtTest/QtTest>

#include "window_fit.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestWindowFit : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // The window with its frame fits the screen it opens on (the status bar and the class's
  // join code were below a 1280x800 screen): 1280x800 where there is room, less on less.
  void testTheWindowFitsItsScreenFrameIncluded() {
    const QMargins frame(2, 36, 2, 2);
    for (const QSize screen : {QSize(1280, 800), QSize(1024, 700), QSize(1920, 1080)}) {
      const QSize s = fittedWindowSize(QRect(QPoint(0, 24), screen - QSize(0, 24)), frame);  // a top panel
      QVERIFY(s.width() + frame.left() + frame.right() <= screen.width());
      QVERIFY(s.height() + frame.top() + frame.bottom() <= screen.height() - 24);
      QVERIFY(s.width() <= 1280 && s.height() <= 800);
    }
    QCOMPARE(fittedWindowSize(QRect(0, 0, 1920, 1080), frame), QSize(1280, 800));
    QCOMPARE(fittedWindowSize(QRect(0, 0, 1280, 800), frame), QSize(1276, 762));
  }

  void testATinyScreenStillGetsAUsableWindow() {
    QCOMPARE(fittedWindowSize(QRect(0, 0, 300, 200), QMargins(2, 36, 2, 2)), QSize(320, 240));
  }

  void testTheFrameBeforeTheWindowManagerFramedIt() {
    QWidget window;
    QCOMPARE(windowFrame(window), QMargins(2, 36, 2, 2));  // not shown yet: a title bar's worth
  }

  void testOffscreenWindowsGetThePreferredSize() {
    QCOMPARE(QGuiApplication::platformName(), QString("offscreen"));
    QWidget window;
    window.resize(300, 300);
    fitToScreen(window);
    QCOMPARE(window.size(), kPreferredWindowSize);
  }
};

DDPSCOPE_TEST_MAIN(TestWindowFit)
#include "tst_window_fit.moc"
