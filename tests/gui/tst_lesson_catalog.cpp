// The lesson catalog: Run live re-runs a lesson's own job with the user's parameters.
#include <QtTest/QtTest>

#include <map>
#include <set>

#include "graph_data.h"
#include "ddp_lesson.h"
#include "lesson.h"
#include "lesson_catalog.h"
#include "parameter_bucket_model.h"
#include "sequence_data.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLessonCatalog : public QObject {
  Q_OBJECT

 private slots:

  // "Run live" re-records a DDP lesson with the student's choices: lesson 5's job keeps
  // its ZeRO flags, lesson 3's has none, both take the chosen bucket cap.
  void testRunLiveKeepsTheLessonsJob() {
    const auto& all = lessons();
    const auto zero = std::find_if(all.begin(), all.end(), [](const LessonInfo& l) { return l.zero; });
    const auto buckets = std::find_if(all.begin(), all.end(), [](const LessonInfo& l) { return l.ddp && !l.zero; });
    QVERIFY(zero != all.end() && buckets != all.end());
    QCOMPARE(zero->file, QString("zero-overlap.ddprun"));
    LiveParameters p;
    p.bucket_cap_mb = 0.25;
    const QStringList z = liveArguments(*zero, p, "/tmp/z.ddprun");
    QVERIFY2(z.contains("--zero-overlap") && z[z.indexOf("--optimizer") + 1] == "adamw", qPrintable(z.join(' ')));
    QCOMPARE(z[z.indexOf("--bucket-cap-mb") + 1], QString("0.25"));
    const QStringList b = liveArguments(*buckets, p, "/tmp/b.ddprun");
    QVERIFY2(!b.contains("--zero-overlap") && !b.contains("--optimizer"), qPrintable(b.join(' ')));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLessonCatalog)
#include "tst_lesson_catalog.moc"
