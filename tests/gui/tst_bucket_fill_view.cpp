// The DDP lesson's bucket bars: a bar fills as its gradients arrive (nothing drawn in an
// empty one), its words fit the room or are shortened before anything is cut, and a ZeRO
// lesson's rows get a third line for this rank's share.
#include <QtTest/QtTest>

#include "bucket_fill_view.h"
#include "test_registry.h"

using namespace ddpscope::gui;

namespace {

BucketFill bucket(int ready, int total, BucketFill::Phase phase, int owned = -1) {
  BucketFill f;
  f.params_ready = ready;
  f.params_total = total;
  f.bytes_ready = ready * 4096;
  f.bytes_total = total * 4096;
  f.phase = phase;
  f.params_owned = owned;
  return f;
}

// The colour just inside bucket b's bar, at its left end (the view draws bar b at y 26 +
// b rows, from x 70).
QColor barStart(BucketFillView& view, int b, int rowHeight) {
  return view.grab().toImage().pixelColor(QPoint(73, 26 + b * rowHeight + 8) * view.devicePixelRatioF());
}

}  // namespace

class TestBucketFillView : public QObject {
  Q_OBJECT

 private slots:
  void testABarFillsAsItsGradientsArrive() {
    BucketFillView view;
    view.setBuckets({bucket(0, 4, BucketFill::Phase::Filling), bucket(4, 4, BucketFill::Phase::Reduced)}, 0);
    view.resize(480, view.sizeHint().height());
    const int row = (view.sizeHint().height() - 40) / 2;
    const QColor empty = barStart(view, 0, row), full = barStart(view, 1, row);
    QCOMPARE(empty, view.palette().color(QPalette::Base));
    QVERIFY2(full != view.palette().color(QPalette::Base), qPrintable(full.name()));
    QCOMPARE(view.buckets().size(), size_t{2});
  }

  void testWordsAreShortenedBeforeTheyAreCut() {
    BucketFillView view;
    view.setBuckets({bucket(3, 4, BucketFill::Phase::Filling), bucket(4, 4, BucketFill::Phase::Reducing)}, 1);
    view.resize(520, view.sizeHint().height());
    view.grab();
    QCOMPARE(view.elidedLines(), 0);
    // Here the long form ("3 of 4 gradients · 12 of 16 KiB · full, waits ...") does not fit
    // the 220-pixel bar; the short ones do.
    view.resize(300, view.sizeHint().height());
    const QString longForm = "3 of 4 gradients · 12 of 16 KiB · full, waits for a bucket before it";
    QVERIFY(view.fontMetrics().horizontalAdvance(longForm) > 300 - 80);
    view.grab();
    QCOMPARE(view.elidedLines(), 0);
    view.resize(110, view.sizeHint().height());  // nothing fits a 40-pixel bar
    view.grab();
    QVERIFY(view.elidedLines() > 0);
  }

  void testZeroRowsHaveAThirdLine() {
    BucketFillView plain, zero;
    plain.setBuckets({bucket(1, 2, BucketFill::Phase::Filling)}, 0);
    zero.setBuckets({bucket(1, 2, BucketFill::Phase::Filling, 1)}, 0);
    QVERIFY2(zero.sizeHint().height() > plain.sizeHint().height(),
             qPrintable(QString("%1 vs %2").arg(zero.sizeHint().height()).arg(plain.sizeHint().height())));
  }
};

DDPSCOPE_TEST_MAIN(TestBucketFillView)
#include "tst_bucket_fill_view.moc"
