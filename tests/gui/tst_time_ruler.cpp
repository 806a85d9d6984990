// The send/recv view's time ruler, as painted: a line down the view at every tick the
// ruler's steps give, from just above the baseline to the bottom, a label beside each
// above the baseline, offset by where the axis starts in the widget, in the colour asked.
#include <QtTest/QtTest>

#include <QImage>
#include <QPainter>

#include "ruler_ticks.h"
#include "time_ruler.h"
#include "test_registry.h"

using namespace ddpscope::gui;

namespace {

constexpr int kX0 = 40, kTop = 30, kBottom = 90;

QImage painted(const TimeAxis& axis, int64_t origin_ns) {
  QImage image(900, 100, QImage::Format_RGB32);
  image.fill(Qt::white);
  QPainter p(&image);
  paintTimeRuler(p, axis, origin_ns, kX0, kTop, kBottom, Qt::red);
  return image;
}

bool isRed(const QImage& image, int x, int y) { return image.pixelColor(x, y) == QColor(Qt::red); }

}  // namespace

class TestTimeRuler : public QObject {
  Q_OBJECT

 private slots:
  void testALineAndALabelAtEveryTick() {
    TimeAxis axis{1'000'000, 2'000'000, 800};  // 1 ms over 800 px
    const QImage image = painted(axis, 0);
    QFont font;
    const QFontMetrics fm(font);
    const RulerTicks ticks =
        rulerTicks(axis, 0, [&](const std::string& s) { return fm.horizontalAdvance(QString::fromStdString(s)); });
    QVERIFY(ticks.ticks.size() >= 3);
    for (const RulerTick& t : ticks.ticks) {
      const int x = kX0 + static_cast<int>(t.x);
      QVERIFY2(isRed(image, x, kTop - 4) && isRed(image, x, (kTop + kBottom) / 2) && isRed(image, x, kBottom),
               qPrintable(QString("no line at x %1 (%2)").arg(x).arg(t.label.c_str())));
      QVERIFY2(!isRed(image, x, kBottom + 2), "the line stops at the bottom");
      bool label = false;  // some red in the label's box, above the baseline, right of the line
      for (int lx = x + 2; lx < x + 2 + fm.horizontalAdvance(QString::fromStdString(t.label)) && !label; ++lx)
        for (int ly = kTop - 6 - fm.ascent(); ly < kTop - 6 && !label; ++ly)
          label = ly >= 0 && lx < image.width() && isRed(image, lx, ly);
      QVERIFY2(label, qPrintable(QString("no label beside x %1").arg(x)));
    }
    // Nothing between two ticks below the labels: no stray lines.
    const int a = kX0 + static_cast<int>(ticks.ticks[0].x), b = kX0 + static_cast<int>(ticks.ticks[1].x);
    for (int x = a + 1; x < b; ++x)
      QVERIFY2(!isRed(image, x, kBottom - 1), qPrintable(QString("stray red at x %1").arg(x)));
  }

  void testTheOriginMovesTheLabelsNotTheLines() {
    TimeAxis axis{1'000'000, 2'000'000, 800};
    QFont font;
    const QFontMetrics fm(font);
    const auto width = [&](const std::string& s) { return fm.horizontalAdvance(QString::fromStdString(s)); };
    const RulerTicks from0 = rulerTicks(axis, 0, width), from1ms = rulerTicks(axis, 1'000'000, width);
    QCOMPARE(from0.ticks.size(), from1ms.ticks.size());
    QCOMPARE(from0.ticks[0].x, from1ms.ticks[0].x);
    QVERIFY(from0.ticks[0].label != from1ms.ticks[0].label);
    QVERIFY(painted(axis, 0) != painted(axis, 1'000'000));  // the labels differ on screen
  }
};

DDPSCOPE_TEST_MAIN(TestTimeRuler)
#include "tst_time_ruler.moc"
