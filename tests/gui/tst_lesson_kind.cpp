// The kinds of lesson: each shipped recording is found to hold its kind (a ring, a DDP
// rank's iterations, a distributed backward pass), each kind names the view that draws
// it and the steps Predict mode asks before, and kinds are found by name.
#include <QtTest/QtTest>

#include "lesson_kind.h"
#include "run_store_reader.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {

probes::RunStoreReader shipped(const char* file) {
  return probes::RunStoreReader(std::string(DDPSCOPE_LESSONS_DIR "/") + file);
}

// The first kind, in lessonKinds()' order, that `file` holds.
std::string foundIn(const char* file) {
  auto run = shipped(file);
  for (const LessonKind* k : lessonKinds())
    if (k->foundIn(run)) return k->name();
  return "";
}

}  // namespace

class TestLessonKind : public QObject {
  Q_OBJECT

 private slots:
  void testEachRecordingHoldsItsKind() {
    QCOMPARE(foundIn("ring-allreduce.ddprun"), std::string("ring"));
    QCOMPARE(foundIn("ddp-buckets.ddprun"), std::string("ddp"));
    QCOMPARE(foundIn("zero-overlap.ddprun"), std::string("ddp"));
    QCOMPARE(foundIn("seed-fast.ddprun"), std::string("autograd"));
    QCOMPARE(foundIn("unused-smart.ddprun"), std::string("autograd"));
  }

  void testEachKindNamesItsView() {
    QCOMPARE(std::string(ringLessonKind().view()), std::string("ring"));
    QCOMPARE(std::string(ddpLessonKind().view()), std::string("buckets"));
    QCOMPARE(std::string(autogradLessonKind().view()), std::string("graph"));
    QCOMPARE(lessonKindNamed("ddp"), &ddpLessonKind());
    QCOMPARE(lessonKindNamed("no such kind"), nullptr);
  }

  void testALoadedLessonKnowsItsKindAndWhatIsAsked() {
    auto run = shipped("ring-allreduce.ddprun");
    const Lesson ring = ringLessonKind().load(run, 0);
    QCOMPARE(&kindOf(ring), &ringLessonKind());
    size_t asked = 0;
    for (const LessonStep& s : ring.steps) {
      QCOMPARE(ringLessonKind().asksBefore(s), s.kind == StepKind::RingSend);
      asked += ringLessonKind().asksBefore(s);
    }
    QVERIFY(asked > 0);
    auto seed = shipped("seed-fast.ddprun");
    const Lesson pass = autogradLessonKind().load(seed, 0);
    QCOMPARE(&kindOf(pass), &autogradLessonKind());
    for (const LessonStep& s : pass.steps)
      QCOMPARE(autogradLessonKind().asksBefore(s), s.kind == StepKind::NodeRuns);
    // What the views draw, as `lesson show --json` gives it.
    nlohmann::json out = nlohmann::json::object();
    ringLessonKind().describe(ring, ring.stateAfter(ring.steps.size()), out);
    QCOMPARE(out.value("ranks", 0), 4);
    QCOMPARE(out.value("tensor_bytes", int64_t{0}), ring.ring_tensor_bytes);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLessonKind)
#include "tst_lesson_kind.moc"
