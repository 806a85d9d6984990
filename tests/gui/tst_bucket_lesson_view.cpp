// The DDP lessons' view: its bucket bars follow the state at every step, its options are
// the lesson's as recorded and reach Run live, and its words name the run's bucket cap,
// saying so when parameters larger than the cap each get a bucket of their own.
#include <QtTest/QtTest>

#include <QCheckBox>
#include <QDoubleSpinBox>

#include "bucket_fill_view.h"
#include "bucket_lesson_view.h"
#include "lesson_catalog.h"
#include "shipped_lessons.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::testing;

class TestBucketLessonView : public QObject {
  Q_OBJECT
  Lesson m_lesson = shippedLesson("ddp-buckets.ddprun");

 private slots:
  void testTheBarsFollowTheState() {
    BucketLessonView view;
    view.setLesson(m_lesson);
    QVERIFY2(view.title(m_lesson).startsWith("rank 0"), qPrintable(view.title(m_lesson)));
    const size_t ready = firstStep(m_lesson, StepKind::BucketReady);
    QVERIFY(ready < m_lesson.steps.size());
    for (size_t at : {size_t{0}, ready + 1, m_lesson.steps.size()}) {
      const LessonState s = m_lesson.stateAfter(at);
      view.showState(s, at, false);
      const auto& shown = view.bucketView()->buckets();
      QCOMPARE(shown.size(), s.buckets.size());
      for (size_t b = 0; b < shown.size(); ++b) {
        QCOMPARE(shown[b].params_ready, s.buckets[b].params_ready);
        QCOMPARE(shown[b].phase, s.buckets[b].phase);
      }
    }
    // After a bucket's gradients all arrived, it is no longer filling.
    const LessonState s = m_lesson.stateAfter(ready + 1);
    const int b = m_lesson.steps[ready].bucket;
    QVERIFY(b >= 0 && static_cast<size_t>(b) < s.buckets.size());
    QVERIFY(s.buckets[b].phase != BucketFill::Phase::Filling);
  }

  void testOptionsAreTheLessonsAndReachRunLive() {
    BucketLessonView view;
    const LessonInfo* hang = nullptr;
    for (const LessonInfo& l : lessons())
      if (l.unused_parameter) hang = &l;
    QVERIFY(hang);
    view.setOptions(*hang);
    QVERIFY(view.unusedBox()->isChecked());
    QVERIFY(!view.findUnusedBox()->isChecked());
    QCOMPARE(view.bucketCapBox()->value(), hang->bucket_cap_mb);
    view.bucketCapBox()->setValue(0.25);
    view.findUnusedBox()->setChecked(true);
    LiveParameters p;
    view.readOptions(p);
    QCOMPARE(p.bucket_cap_mb, 0.25);
    QVERIFY(p.unused_parameter && p.find_unused_parameters);
  }

  void testTheWordsNameTheRunsCap() {
    BucketLessonView view;
    const QString about = "Rank 0 of a DDP job ({cap} MiB buckets).";
    QCOMPARE(view.about(about, m_lesson, R"({"bucket_cap_mb": 1})"), QString("Rank 0 of a DDP job (1 MiB buckets)."));
    QCOMPARE(view.about(about, m_lesson, "{}"), QString("Rank 0 of a DDP job (its buckets)."));
    // A cap smaller than the largest parameter: each larger one is a bucket of its own.
    const QString small = view.about(about, m_lesson, R"({"bucket_cap_mb": 0.0001})");
    QVERIFY2(small.contains("This run's cap is 0.0001 MiB") && small.contains("a bucket of its own"),
             qPrintable(small));
  }
};

DDPSCOPE_TEST_MAIN(TestBucketLessonView)
#include "tst_bucket_lesson_view.moc"
