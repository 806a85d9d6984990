// The ring allreduce lesson (issue 33): `ddpscope-cli example ring --np 4` runs the
// engine's ring (engine/c10d/ring_allreduce.h) as a real 4-rank mpirun job that records
// every step; the lesson's state after each step is checked against the run's chunk
// events (which block each rank sent and received), the reduce-scatter leaves each rank
// one block's full sum, the all-gather every block's, and each rank sends 2(n-1)/n of
// the tensor. Then the Learn tab replays the shipped recording, with predict mode asking
// which block moves next.
#include <QtTest/QtTest>

#include <QCheckBox>
#include <QLabel>
#include <QProcess>
#include <QTemporaryDir>
#include <bit>

#include "graph_view.h"
#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "learn_page.h"
#include "ring_lesson_view.h"
#include "lesson_catalog.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "ring_lesson.h"
#include "ring_view.h"
#include "run_store_reader.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::Kind;
using ddpscope::probes::RunStoreReader;

namespace {

const QString kRingLessons = QStringLiteral(DDPSCOPE_LESSONS_DIR);

// Ranks r-k .. r (mod n): whose values rank r's received block sums after reduce-scatter
// step k (the ring's invariant).
uint64_t ring_window(int r, int k, int n) {
  uint64_t bits = 0;
  for (int j = 0; j <= k + 1; ++j)
    bits |= uint64_t{1} << ((r - j + n) % n);
  return bits;
}

void checkAgainstTheRun(const QString& file) {
  RunStoreReader run(file.toStdString());
  const auto spans = run.spans({.kinds = {Kind::RingStep}});
  const Lesson l = loadRingLesson(run);
  const int n = l.ring_ranks;
  QCOMPARE(n, 4);
  // Each recorded step in two halves: its send and its receive.
  QCOMPARE(l.steps.size(), 2 * spans.size());
  QCOMPARE(l.steps.size(), size_t(2 * n * 2 * (n - 1)));
  const uint64_t all = (uint64_t{1} << n) - 1;
  for (size_t i = 0; i < l.steps.size(); ++i) {
    const LessonStep& st = l.steps[i];
    // The step is one of the run's chunk events, as recorded.
    const auto event = std::find_if(spans.begin(), spans.end(),
                                    [&](const auto& s) { return s.rank == st.rank && s.msg_id == st.iteration; });
    QVERIFY(event != spans.end());
    const LessonState before = l.stateAfter(i), after = l.stateAfter(i + 1);
    if (st.kind == StepKind::RingSend) {
      QCOMPARE(st.param, int(event->param));
      QCOMPARE(st.peer, int(event->peer));
      QVERIFY(after.holds == before.holds);  // sending changes no one's sums
      QCOMPARE(after.ring_steps_done[size_t(st.rank)], st.iteration + 1);
      // The block a rank sends is the one it received (and summed) the step before.
      if (st.iteration > 0) {
        const auto prev = std::find_if(l.steps.begin(), l.steps.end(), [&](const LessonStep& o) {
          return o.kind == StepKind::RingReceive && o.rank == st.rank && o.iteration == st.iteration - 1;
        });
        QVERIFY(prev < l.steps.begin() + std::ptrdiff_t(i));
        QCOMPARE(st.param, prev->bucket);
      } else {
        QCOMPARE(st.param, st.rank);
      }
      continue;
    }
    QCOMPARE(int(st.kind), int(StepKind::RingReceive));
    QCOMPARE(st.bucket, int(event->bucket));
    QCOMPARE(st.peer, (st.rank + n - 1) % n);
    // Only the receiving rank's received block changes.
    for (int r = 0; r < n; ++r)
      for (int b = 0; b < n; ++b)
        if (r != st.rank || b != st.bucket)
          QCOMPARE(after.holds[size_t(r)][size_t(b)], before.holds[size_t(r)][size_t(b)]);
    const uint64_t got = after.holds[size_t(st.rank)][size_t(st.bucket)];
    if (st.iteration < n - 1)
      QCOMPARE(got, ring_window(st.rank, st.iteration, n));  // the partial sum grows by one rank a step
    else
      QCOMPARE(got, all);  // all-gather: the full sum arrives
  }
  // After its reduce-scatter (its step n-2), each rank holds exactly one full block:
  // block (r + 1) mod n. Ranks get there at different moments, each is checked at its own.
  for (int r = 0; r < n; ++r) {
    const auto last = std::find_if(l.steps.begin(), l.steps.end(), [&](const LessonStep& o) {
      return o.kind == StepKind::RingReceive && o.rank == r && o.iteration == n - 2;
    });
    QVERIFY(last != l.steps.end());
    const LessonState mid = l.stateAfter(size_t(last - l.steps.begin()) + 1);
    int full = 0;
    for (int b = 0; b < n; ++b)
      if (mid.holds[size_t(r)][size_t(b)] == all) {
        ++full;
        QCOMPARE(b, (r + 1) % n);
      }
    QCOMPARE(full, 1);
  }
  // At the end every block is whole on every rank, and each rank sent 2(n-1)/n of the tensor.
  const LessonState end = l.stateAfter(l.steps.size());
  for (int r = 0; r < n; ++r) {
    for (int b = 0; b < n; ++b)
      QCOMPARE(end.holds[size_t(r)][size_t(b)], all);
    QCOMPARE(end.ring_bytes_sent[size_t(r)] * n, l.ring_tensor_bytes * 2 * (n - 1));
  }
  QVERIFY(QString::fromStdString(l.explain(l.steps.size() - 1)).contains("2(n-1)/n = 1.50"));
}

}  // namespace

class TestRingLesson : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void testARingRecordedNowMatchesItsChunkEvents() {
    QTemporaryDir dir;
    const QString file = dir.filePath("ring.ddprun");
    QProcess job;
    job.setProcessChannelMode(QProcess::MergedChannels);
    job.start(QStringLiteral(DDPSCOPE_CLI_PATH), {"example", "ring", "--np", "4", "--out", file});
    QVERIFY(job.waitForFinished(120000));
    const QString out = QString::fromUtf8(job.readAll());
    QVERIFY2(job.exitCode() == 0, qPrintable(out));
    QCOMPARE(out.count("every element = 10; sent 48 of the tensor's 32 bytes in 6 steps"), 4);
    checkAgainstTheRun(file);
  }

  void testTheShippedRingLessonReplaysWithPredictions() {
    checkAgainstTheRun(kRingLessons + "/ring-allreduce.ddprun");
    QTemporaryDir dir;
    MainWindow window(dir.path());
    window.resize(1280, 800);
    window.show();
    const auto ring = std::find_if(lessons().begin(), lessons().end(), [](const LessonInfo& i) { return i.ring; });
    QVERIFY(ring != lessons().end());
    QVERIFY(window.openLesson(int(ring - lessons().begin())));
    LearnPage* page = window.part<LearnPage>();
    QVERIFY(page->lesson().ring);
    QVERIFY(page->lessonView<RingLessonView>()->ringView()->isVisible());
    QVERIFY(!page->graph()->isVisible());
    // Predict: which block does the asked rank send? A wrong cell is answered, the right one steps.
    page->predictBox()->setChecked(true);
    page->stepForward();
    QVERIFY(page->isAskingPrediction());
    const LessonStep& next = page->lesson().steps[page->applied()];
    QVERIFY(page->explanation()->text().contains(QString("rank %1 send next").arg(next.rank)));
    const int wrong = (next.param + 1) % page->lesson().ring_ranks;
    QTest::mouseClick(page->lessonView<RingLessonView>()->ringView(), Qt::LeftButton, {},
                      page->lessonView<RingLessonView>()->ringView()->cellRect(next.rank, wrong).center());
    QVERIFY2(page->feedback()->text().startsWith("Not block"), qPrintable(page->feedback()->text()));
    QCOMPARE(page->applied(), size_t{0});
    QTest::mouseClick(page->lessonView<RingLessonView>()->ringView(), Qt::LeftButton, {},
                      page->lessonView<RingLessonView>()->ringView()->cellRect(next.rank, next.param).center());
    QCOMPARE(page->applied(), size_t{1});
    QCOMPARE(page->score(), 0);  // the question was missed at the first wrong click
    QCOMPARE(page->predictions(), 1);
  }
};

DDPSCOPE_TEST_MAIN(TestRingLesson)
#include "tst_ring_lesson.moc"
