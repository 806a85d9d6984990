// Distributed-autograd lessons from their recorded runs: the seed's FAST-mode pass
// replayed step by step, a failed pass ending on its error, and SMART mode's exchange.
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

class TestLesson : public QObject {
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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLesson)
#include "tst_lesson.moc"
