// The DDP and ZeRO lessons from their recorded runs: buckets filling and reducing step by
// step, the hang verdict at the end of the hang lesson, and who updates what under ZeRO.
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

class TestDdpLesson : public QObject {
  Q_OBJECT

 private slots:

  // Lesson 3 from its shipped recording: rank 0's first two DDP iterations.
  void testDdpLessonShowsBucketsFillingAndReducing() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/ddp-buckets.ddprun");
    const Lesson l = loadDdpLesson(reader, 0);
    QVERIFY(l.ddp);
    QCOMPARE(l.layout.param_names.size(), size_t{8});  // 4 Linear layers
    QVERIFY(l.layout.generations.size() == 2);         // assigned, then rebuilt
    const size_t buckets = l.layout.generations[0].size();
    QVERIFY(buckets >= 3);
    for (int iteration = 1; iteration <= 2; ++iteration) {
      std::vector<int> ready_order;
      std::vector<std::pair<int64_t, int>> launches;  // (time, bucket)
      size_t start = 0;
      for (size_t i = 0; i < l.steps.size(); ++i) {
        const LessonStep& st = l.steps[i];
        if (st.iteration != iteration) continue;
        if (st.kind == StepKind::IterationStarts) start = i;
        if (st.kind == StepKind::GradReady) ready_order.push_back(st.param);
        if (st.kind == StepKind::AllreduceStarts) launches.push_back({st.t_ns, st.bucket});
        if (st.kind == StepKind::BucketReady) {
          // Full at its ready step: every gradient of the bucket arrived.
          const LessonState s = l.stateAfter(i + 1);
          const BucketFill& b = s.buckets[static_cast<size_t>(st.bucket)];
          QCOMPARE(b.params_ready, b.params_total);
          QCOMPARE(b.bytes_ready, b.bytes_total);
        }
      }
      // Gradients arrive in reverse order of the parameters.
      QCOMPARE(ready_order, (std::vector<int>{7, 6, 5, 4, 3, 2, 1, 0}));
      // Allreduces launch in bucket index order, one per bucket.
      QCOMPARE(launches.size(), buckets);
      for (size_t b = 0; b < launches.size(); ++b)
        QCOMPARE(launches[b].second, static_cast<int>(b));
      // The iteration starts with empty buckets of its generation.
      const LessonState at_start = l.stateAfter(start + 1);
      QCOMPARE(at_start.generation, iteration - 1);
      for (const BucketFill& b : at_start.buckets) {
        QCOMPARE(b.params_ready, 0);
        QCOMPARE(static_cast<int>(b.phase), static_cast<int>(BucketFill::Phase::Filling));
      }
    }
    // At the end every bucket of iteration 2 is reduced and every node has run.
    const LessonState end = l.stateAfter(l.steps.size());
    for (const BucketFill& b : end.buckets)
      QCOMPARE(static_cast<int>(b.phase), static_cast<int>(BucketFill::Phase::Reduced));
    QVERIFY(std::all_of(end.executed.begin(), end.executed.end(), [](bool e) { return e; }));
    QVERIFY(std::all_of(end.counters.begin(), end.counters.end(), [](int64_t c) { return c == 0; }));
    QVERIFY(l.explain(0).find("reverse order of registration") != std::string::npos);
    for (size_t i = 0; i < l.steps.size(); ++i)
      QVERIFY2(!l.explain(i).empty(), qPrintable(QString::number(i)));
  }

  // Lesson 4: rank 1 of a job whose rank 1 skips a layer without find_unused_parameters.
  // Its bucket 1 never fills, bucket 2 fills but waits behind it, and the lesson ends on
  // the run's failure and the hang view's verdict.
  void testDdpLessonEndsOnTheHangVerdict() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/ddp-unused.ddprun");
    const Lesson l = loadDdpLesson(reader, 1);
    QVERIFY(!l.steps.empty());
    QCOMPARE(static_cast<int>(l.steps.back().kind), static_cast<int>(StepKind::Verdict));
    const std::string verdict = l.explain(l.steps.size() - 1);
    QVERIFY2(verdict.find("No gradient ever reached {layers.2.weight, layers.2.bias} on rank 1") != std::string::npos,
             verdict.c_str());
    QVERIFY2(verdict.find("--find-unused-parameters") != std::string::npos, verdict.c_str());
    QVERIFY2(verdict.find("rank 0 waits in allreduce") != std::string::npos, verdict.c_str());
    const LessonState end = l.stateAfter(l.steps.size());
    QCOMPARE(end.buckets.size(), size_t{3});
    QCOMPARE(end.buckets[1].params_ready, 0);
    QCOMPARE(end.buckets[2].params_ready, end.buckets[2].params_total);
    QCOMPARE(static_cast<int>(end.buckets[2].phase), static_cast<int>(BucketFill::Phase::Filling));  // never launched
  }

  // Lesson 5: rank 0 of the same job under ZeRO overlapped with DDP. Each iteration it
  // steps its share of a bucket right after that bucket's allreduce ends, once per bucket
  // holding a parameter it owns and never for another, then the parameters are broadcast
  // after backward; the buckets show what this rank updates.
  void testZeroLessonShowsWhoUpdatesWhat() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/zero-overlap.ddprun");
    const Lesson l = loadDdpLesson(reader, 0);
    QCOMPARE(l.layout.owners.size(), l.layout.param_names.size());
    QVERIFY(std::count(l.layout.owners.begin(), l.layout.owners.end(), 0) > 0);
    QVERIFY(std::count(l.layout.owners.begin(), l.layout.owners.end(), 1) > 0);
    for (int iteration = 1; iteration <= 2; ++iteration) {
      const int generation = std::min<int>(iteration - 1, static_cast<int>(l.layout.generations.size()) - 1);
      const auto& buckets = l.layout.generations[static_cast<size_t>(generation)];
      std::set<int> expected;  // buckets with a parameter rank 0 owns
      for (size_t b = 0; b < buckets.size(); ++b)
        for (int p : buckets[b])
          if (l.layout.owners[static_cast<size_t>(p)] == 0) expected.insert(static_cast<int>(b));
      std::set<int> stepped;
      std::set<int> reduced;
      size_t broadcast = 0, last_shard = 0, last_node = 0;
      for (size_t i = 0; i < l.steps.size(); ++i) {
        const LessonStep& st = l.steps[i];
        if (st.iteration != iteration) continue;
        if (st.kind == StepKind::AllreduceEnds) reduced.insert(st.bucket);
        if (st.kind == StepKind::NodeRuns) last_node = i;
        if (st.kind == StepKind::ShardStep) {
          QVERIFY2(reduced.count(st.bucket), "a shard stepped before its bucket was reduced");
          stepped.insert(st.bucket);
          last_shard = i;
          QVERIFY(l.stateAfter(i + 1).buckets[static_cast<size_t>(st.bucket)].stepped);
          const std::string text = l.explain(i);
          QVERIFY2(text.find("steps its share of it at once") != std::string::npos, text.c_str());
        }
        if (st.kind == StepKind::ParamsBroadcast) {
          broadcast = i;
          QVERIFY(st.bytes > 0);
          QVERIFY(l.stateAfter(i + 1).broadcast);
          QVERIFY(l.explain(i).find("broadcasts the parameters it updated") != std::string::npos);
        }
      }
      QCOMPARE(stepped, expected);
      QVERIFY2(broadcast > last_shard && broadcast > last_node, "the broadcast ends the step");
      const LessonState at_start = l.stateAfter(1);
      for (const BucketFill& b : at_start.buckets)
        QVERIFY(b.params_owned >= 0 && !b.stepped);
    }
    QVERIFY2(l.explain(0).find("With ZeRO, rank 0 updates") != std::string::npos, l.explain(0).c_str());
    QVERIFY(l.explain(0).find("keeps the optimizer state of those only") != std::string::npos);
    // Lesson 3's run has no partition: nothing of this shows.
    ddpscope::probes::RunStoreReader plain(DDPSCOPE_LESSONS_DIR "/ddp-buckets.ddprun");
    const Lesson p = loadDdpLesson(plain, 0);
    QVERIFY(p.layout.owners.empty());
    QVERIFY(std::none_of(p.steps.begin(), p.steps.end(), [](const LessonStep& st) {
      return st.kind == StepKind::ShardStep || st.kind == StepKind::ParamsBroadcast;
    }));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestDdpLesson)
#include "tst_ddp_lesson.moc"
