// The Learn tab's lessons, replayed from the real recordings in resources/lessons: the
// seed's FAST and SMART modes, DDP's buckets filling and reducing, and the hang verdict.
#include <QtTest/QtTest>

#include <map>
#include <set>

#include "graph_data.h"
#include "ddp_lesson.h"
#include "lesson.h"
#include "lesson_catalog.h"
#include "parameter_bucket_model.h"
#include "sequence_data.h"

using namespace ddpscope::gui;

class TestLessons : public QObject {
  Q_OBJECT

 private slots:
  // Lesson 1 from its shipped recording (resources/lessons/record.sh): seed 000's example
  // in FAST mode. The steps are the run's events; the state at each step is what they imply.
  void testLessonReplaysSeedFast() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/seed-fast.ddprun");
    const Lesson l = loadLesson(reader, 1);
    QCOMPARE(l.graph.nodes.size(), size_t{11});
    QVERIFY(l.steps.size() > 20);
    QCOMPARE(static_cast<int>(l.steps.front().kind), static_cast<int>(StepKind::ContextCreated));
    QCOMPARE(static_cast<int>(l.steps.back().kind), static_cast<int>(StepKind::ContextReleased));
    auto node = [&](int rank, const std::string& op) {
      for (size_t i = 0; i < l.graph.nodes.size(); ++i)
        if (l.graph.nodes[i].rank == rank && l.graph.nodes[i].op == op) return static_cast<int>(i);
      return -1;
    };
    // Before any step: the counts the pass starts from, nothing run, nothing on the way.
    const LessonState start = l.stateAfter(0);
    for (size_t i = 0; i < l.graph.nodes.size(); ++i)
      QCOMPARE(start.counters[i], l.graph.nodes[i].deps);
    QVERIFY(std::none_of(start.executed.begin(), start.executed.end(), [](bool e) { return e; }));
    QVERIFY(start.in_flight.empty());
    // Each node's count falls one gradient at a time, from its deps to 0.
    std::map<int, int64_t> expect;
    for (size_t i = 0; i < l.graph.nodes.size(); ++i)
      expect[static_cast<int>(i)] = l.graph.nodes[i].deps;
    size_t add_runs = 0, recv1_at_one = 0, first_gradients = 0, later_gradients = 0;
    for (size_t i = 0; i < l.steps.size(); ++i) {
      const LessonStep& st = l.steps[i];
      if (st.kind == StepKind::CountFalls) QCOMPARE(st.count_left, --expect[st.node]);
      if (st.kind == StepKind::NodeRuns && st.node == node(1, "AddBackward")) add_runs = i;
      if (st.kind == StepKind::CountFalls && st.node == node(1, "RecvRpcBackward") && st.count_left == 1)
        recv1_at_one = i;
      if (st.kind == StepKind::MessageArrived && st.wire_kind == 1 && st.name == "_ddpscope.dist_backward")
        (st.rank == 1 ? first_gradients : later_gradients) = i;
    }
    for (const auto& [n, left] : expect)
      QCOMPARE(left, int64_t{0});
    // Worker 1 runs AddBackward: it is the node running, and its recv waits for two.
    QVERIFY(add_runs > 0);
    const LessonState at_add = l.stateAfter(add_runs + 1);
    QCOMPARE(at_add.running, node(1, "AddBackward"));
    QCOMPARE(at_add.counters[static_cast<size_t>(node(1, "RecvRpcBackward"))], int64_t{2});
    const LessonState half = l.stateAfter(recv1_at_one + 1);
    QCOMPARE(half.counters[static_cast<size_t>(node(1, "RecvRpcBackward"))], int64_t{1});
    QVERIFY(!half.executed[static_cast<size_t>(node(1, "RecvRpcBackward"))]);
    // Gradient messages: worker 1 hears of the pass first through them; worker 0 already runs it.
    QVERIFY(l.explain(first_gradients).find("first worker 1 hears of this pass") != std::string::npos);
    QVERIFY(l.explain(later_gradients).find("only queue") != std::string::npos);
    // In flight between its send and its arrival; the send/recv view at each step draws
    // the messages sent so far, those in flight without a receive.
    size_t sent = 0;
    for (size_t i = 0; i < l.steps.size(); ++i) {
      const SequenceData seq = lessonSequence(l, i + 1);
      const LessonState s = l.stateAfter(i + 1);
      sent += l.steps[i].kind == StepKind::MessageSent;
      QCOMPARE(seq.arrows.size(), sent);
      QCOMPARE(static_cast<size_t>(seq.in_flight), s.in_flight.size());
      QCOMPARE(static_cast<size_t>(std::count_if(seq.arrows.begin(), seq.arrows.end(),
                                                 [](const SequenceArrow& a) { return a.t_recv_ns < 0; })),
               s.in_flight.size());
      if (l.steps[i].kind == StepKind::MessageSent) QVERIFY(std::count(s.in_flight.begin(), s.in_flight.end(), i) == 1);
    }
    // Before the contexts are released, t1, t2 and t4's gradients are in them.
    const auto released = std::find_if(l.steps.begin(), l.steps.end(),
                                       [](const LessonStep& s) { return s.kind == StepKind::ContextReleased; });
    QVERIFY(released != l.steps.end());
    const LessonState before = l.stateAfter(static_cast<size_t>(released - l.steps.begin()));
    std::set<std::string> held;
    for (int n : before.accumulated)
      held.insert(l.graph.nodes[static_cast<size_t>(n)].op);
    QCOMPARE(held, (std::set<std::string>{"AccumulateGrad(t1)", "AccumulateGrad(t2)", "AccumulateGrad(t4)"}));
    // At the end: every node has run (the leaves accumulated), every count is 0, every
    // message arrived, and both workers released the context and the gradients in it.
    const LessonState end = l.stateAfter(l.steps.size());
    QVERIFY(std::all_of(end.executed.begin(), end.executed.end(), [](bool e) { return e; }));
    QVERIFY(std::all_of(end.counters.begin(), end.counters.end(), [](int64_t c) { return c == 0; }));
    QVERIFY(end.in_flight.empty());
    QVERIFY(end.accumulated.empty());
    QCOMPARE(std::set<int>(end.released.begin(), end.released.end()), (std::set<int>{0, 1}));
    for (size_t i = 0; i < l.steps.size(); ++i)
      QVERIFY2(!l.explain(i).empty(), qPrintable(QString::number(i)));
  }

  // Lesson 2a, FAST: the pass fails, and the lesson ends on the error naming the send
  // function that never got a gradient.
  void testLessonFastEndsOnItsError() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/unused-fast.ddprun");
    const auto graphs = listDistGraphs(reader);
    QVERIFY(!graphs.empty());
    const Lesson l = loadLesson(reader, graphs.front().ctx_id);
    QCOMPARE(static_cast<int>(l.steps.back().kind), static_cast<int>(StepKind::Verdict));
    const std::string text = l.explain(l.steps.size() - 1);
    QVERIFY2(
        text.find("never received gradients") != std::string::npos && text.find("SendRpcBackward") != std::string::npos,
        text.c_str());
  }

  // Lesson 2, SMART: each worker asks for the send functions its search reached, exactly
  // those become active, and the pass completes with every recorded node run.
  void testLessonShowsSmartExchange() {
    ddpscope::probes::RunStoreReader reader(DDPSCOPE_LESSONS_DIR "/unused-smart.ddprun");
    const auto graphs = listDistGraphs(reader);
    QVERIFY(!graphs.empty());
    const Lesson l = loadLesson(reader, graphs.front().ctx_id);
    std::multiset<std::pair<int, int64_t>> asked, active;  // (send's worker, autograd id)
    for (const auto& st : l.steps) {
      if (st.kind == StepKind::SmartAsk) asked.insert({st.peer, st.msg_id});
      if (st.kind == StepKind::SmartActive) active.insert({st.rank, st.msg_id});
    }
    QVERIFY(!asked.empty());
    QCOMPARE(active, asked);
    const LessonState end = l.stateAfter(l.steps.size());
    QVERIFY(std::all_of(end.executed.begin(), end.executed.end(), [](bool e) { return e; }));
    QCOMPARE(static_cast<size_t>(std::count(end.active.begin(), end.active.end(), true)), active.size());
    const auto ask =
        std::find_if(l.steps.begin(), l.steps.end(), [](const LessonStep& s) { return s.kind == StepKind::SmartAsk; });
    QVERIFY(l.explain(static_cast<size_t>(ask - l.steps.begin())).rfind("SMART: ", 0) == 0);
  }

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

QTEST_GUILESS_MAIN(TestLessons)
#include "tst_lessons.moc"
