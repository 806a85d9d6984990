// Which lesson a run holds: the kind asked for, else the first the run holds; a run that
// holds no such lesson gives no steps and says why in words.
#include <QtTest/QtTest>

#include "gui_test_runs.h"
#include "lesson_kind.h"
#include "lesson_loader.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;

class TestLessonLoader : public ScratchTest {
  Q_OBJECT

  static Lesson load(const std::string& file, const std::string& kind, std::string& why) {
    probes::RunStoreReader run(file);
    return loadRunLesson(run, kind, 0, why);
  }

 private slots:
  void testTheFirstKindTheRunHolds() {
    std::string why;
    const Lesson ring = load(DDPSCOPE_LESSONS_DIR "/ring-allreduce.ddprun", "", why);
    QVERIFY2(!ring.steps.empty(), why.c_str());
    QCOMPARE(std::string(kindOf(ring).name()), std::string("ring"));
    const Lesson ddp = load(DDPSCOPE_LESSONS_DIR "/ddp-buckets.ddprun", "", why);
    QCOMPARE(std::string(kindOf(ddp).name()), std::string("ddp"));
  }

  void testTheKindAskedFor() {
    std::string why;
    const Lesson ddp = load(DDPSCOPE_LESSONS_DIR "/ddp-buckets.ddprun", "ddp", why);
    QVERIFY2(!ddp.steps.empty(), why.c_str());
    // A DDP run holds no ring: no steps, and why.
    const Lesson none = load(DDPSCOPE_LESSONS_DIR "/ddp-buckets.ddprun", "ring", why);
    QVERIFY(none.steps.empty());
    QVERIFY2(!why.empty(), "no reason given");
  }

  void testARunWithoutALessonSaysWhy() {
    const std::string file = path("plain.ddprun");
    testing::write_test_run(file, 2, 3);
    std::string why;
    const Lesson none = load(file, "", why);
    QVERIFY(none.steps.empty());
    QVERIFY2(!why.empty(), "no reason given");
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLessonLoader)
#include "tst_lesson_loader.moc"
