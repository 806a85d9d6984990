// Lessons in happens-before order (issue 50, causal_order.h): every shipped lesson, and
// fresh recordings of the ring at 2, 3, 4 and 8 ranks and of the distributed backward
// with the ranks' clocks skewed by up to 5 ms, show nothing before what it waited for:
// a receive after its send, a block after it left its neighbour, a gradient's message
// after it was sent. The same check fails on the clocks' order, so it can fail.
#include <QtTest/QtTest>

#include <QProcess>
#include <QTemporaryDir>
#include <map>
#include <set>

#include "causal_order.h"
#include "graph_data.h"
#include "lesson.h"
#include "lesson_catalog.h"
#include "ring_lesson.h"
#include "run_store_reader.h"
#include "ddp_lesson.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::RunStoreReader;

namespace {

const QString kCausalLessons = QStringLiteral(DDPSCOPE_LESSONS_DIR);

// What is wrong with the order of `steps`, or "" when nothing: every receive after its
// send, every ring send after the receive that brought its block, and (the ring's state)
// no rank holding a block its neighbour has not sent yet.
QString causalityProblem(const Lesson& l) {
  std::map<std::pair<int, int>, size_t> ring_sent, ring_received;
  std::map<std::pair<int64_t, int>, size_t> sent;
  for (size_t i = 0; i < l.steps.size(); ++i) {
    const LessonStep& st = l.steps[i];
    switch (st.kind) {
      case StepKind::RingSend:
        if (st.iteration > 0 && !ring_received.count({st.rank, st.iteration - 1}))
          return QString("step %1: rank %2 sends ring step %3 before it received step %4")
              .arg(i)
              .arg(st.rank)
              .arg(st.iteration)
              .arg(st.iteration - 1);
        ring_sent[{st.rank, st.iteration}] = i;
        break;
      case StepKind::RingReceive:
        if (!ring_sent.count({st.peer, st.iteration}))
          return QString("step %1: rank %2 receives ring step %3 before rank %4 sent it")
              .arg(i)
              .arg(st.rank)
              .arg(st.iteration)
              .arg(st.peer);
        ring_received[{st.rank, st.iteration}] = i;
        break;
      case StepKind::MessageSent: sent[{st.msg_id, st.wire_kind}] = i; break;
      case StepKind::MessageArrived:
        if (!sent.count({st.msg_id, st.wire_kind}))
          return QString("step %1: message %2 arrives at worker %3 before it was sent")
              .arg(i)
              .arg(st.msg_id)
              .arg(st.rank);
        break;
      default: break;
    }
  }
  if (l.ring) {
    const int n = l.ring_ranks;
    for (size_t i = 0; i <= l.steps.size(); ++i) {
      const LessonState s = l.stateAfter(i);
      for (int r = 0; r < n; ++r) {
        const int left = (r + n - 1) % n;
        if (s.ring_steps_received[size_t(r)] > s.ring_steps_done[size_t(left)])
          return QString("after step %1: rank %2 holds %3 received steps, rank %4 sent %5")
              .arg(i)
              .arg(r)
              .arg(s.ring_steps_received[size_t(r)])
              .arg(left)
              .arg(s.ring_steps_done[size_t(left)]);
      }
    }
  }
  return {};
}

// How many steps come before something they waited for (a receive before its send, a
// ring send before the receive that brought its block).
int stepsBeforeTheirCause(const Lesson& l) {
  std::set<std::pair<int, int>> ring_sent, ring_received;
  std::set<std::pair<int64_t, int>> sent;
  int early = 0;
  for (const LessonStep& st : l.steps) {
    if (st.kind == StepKind::RingSend) {
      early += st.iteration > 0 && !ring_received.count({st.rank, st.iteration - 1});
      ring_sent.insert({st.rank, st.iteration});
    } else if (st.kind == StepKind::RingReceive) {
      early += !ring_sent.count({st.peer, st.iteration});
      ring_received.insert({st.rank, st.iteration});
    } else if (st.kind == StepKind::MessageSent) {
      sent.insert({st.msg_id, st.wire_kind});
    } else if (st.kind == StepKind::MessageArrived) {
      early += !sent.count({st.msg_id, st.wire_kind});
    }
  }
  return early;
}

// The same steps in the order of the clocks alone (what the lessons did before).
Lesson byClock(Lesson l) {
  std::stable_sort(l.steps.begin(), l.steps.end(),
                   [](const LessonStep& a, const LessonStep& b) { return a.t_ns < b.t_ns; });
  return l;
}

// Ranks' clocks moved apart by up to 5 ms: even ranks ahead, odd ranks behind.
ClockSkew skewed(int ranks) {
  ClockSkew skew;
  for (int r = 0; r < ranks; ++r)
    skew.push_back({r, (r % 2 ? -1 : 1) * (5'000'000 - 400'000 * r)});
  return skew;
}

QString record(const QTemporaryDir& dir, const QStringList& args, const QString& name) {
  const QString file = dir.filePath(name);
  QProcess job;
  job.setProcessChannelMode(QProcess::MergedChannels);
  job.start(QStringLiteral(DDPSCOPE_CLI_PATH), args + QStringList{"--out", file});
  if (!job.waitForFinished(180000) || job.exitCode() != 0) {
    qWarning("%s", job.readAll().constData());
    return {};
  }
  return file;
}

Lesson distributedLesson(RunStoreReader& run, const ClockSkew& skew = {}) {
  const auto graphs = listDistGraphs(run);
  if (graphs.empty()) return {};
  return loadLesson(run, graphs.front().ctx_id, graphs.front().pass, skew);
}

}  // namespace

class TestCausalOrder : public QObject {
  Q_OBJECT
 private slots:
  // The order itself: a receive stamped before its send (skewed clocks) comes after it;
  // a rank's own steps keep their order; unrelated steps go by clock and are concurrent.
  void testHappensBeforeThenClocks() {
    // 0: rank 0 sends at 100; 1: rank 1 receives it at 50 (its clock is behind);
    // 2: rank 1 does something at 60; 3: rank 2 works alone at 70.
    const std::vector<CausalStep> steps = {{0, 100, {}}, {1, 50, {0}}, {1, 60, {}}, {2, 70, {}}};
    const CausalOrder o = causalOrder(steps);
    QCOMPARE(o.order, (std::vector<size_t>{3, 0, 1, 2}));
    QCOMPARE(o.cyclic, size_t{0});
    // 0 after 3: unrelated (concurrent); 1 after 0: it waited for it; 2 after 1: same rank.
    QCOMPARE(o.concurrent_with_previous, (std::vector<bool>{false, true, false, false}));
    // A cycle (damaged data) still shows every step, the cyclic ones last by clock.
    const CausalOrder c = causalOrder({{0, 1, {1}}, {1, 2, {0}}, {2, 0, {}}});
    QCOMPARE(c.order.size(), size_t{3});
    QCOMPARE(c.cyclic, size_t{2});
    QCOMPARE(c.order.front(), size_t{2});
  }

  void testShippedLessonsFollowCausality() {
    int checked = 0;
    for (const LessonInfo& info : lessons()) {
      RunStoreReader run((kCausalLessons + "/" + info.file).toStdString());
      const Lesson l = info.ring  ? loadRingLesson(run)
                       : info.ddp ? loadDdpLesson(run, info.rank)
                                  : distributedLesson(run);
      QVERIFY2(!l.steps.empty(), qPrintable(info.title));
      const QString problem = causalityProblem(l);
      QVERIFY2(problem.isEmpty(), qPrintable(info.title + ": " + problem));
      qInfo("%s: %zu steps, %d before their cause in clock order, %lld concurrent with the one before",
            qPrintable(info.title), l.steps.size(), stepsBeforeTheirCause(byClock(l)),
            static_cast<long long>(
                std::count_if(l.steps.begin(), l.steps.end(), [](const LessonStep& s) { return s.concurrent; })));
      ++checked;
    }
    QVERIFY(checked >= 6);
  }

  void testFreshRingsFollowCausalityUnderSkew_data() {
    QTest::addColumn<int>("ranks");
    for (int n : {2, 3, 4, 8})
      QTest::addRow("%d ranks", n) << n;
  }
  void testFreshRingsFollowCausalityUnderSkew() {
    QFETCH(int, ranks);
    QTemporaryDir dir;
    const QString file = record(dir, {"example", "ring", "--np", QString::number(ranks)}, "ring.ddprun");
    QVERIFY(!file.isEmpty());
    RunStoreReader run(file.toStdString());
    const Lesson plain = loadRingLesson(run);
    QCOMPARE(plain.ring_ranks, ranks);
    QCOMPARE(plain.steps.size(), size_t(2 * ranks * 2 * (ranks - 1)));
    QVERIFY2(causalityProblem(plain).isEmpty(), qPrintable(causalityProblem(plain)));
    const Lesson skewedLesson = loadRingLesson(run, skewed(ranks));
    QVERIFY2(causalityProblem(skewedLesson).isEmpty(), qPrintable(causalityProblem(skewedLesson)));
    // Clocks alone put some block before it was sent.
    QVERIFY(!causalityProblem(byClock(skewedLesson)).isEmpty());
    // Steps that wait for nothing shown before them are said to be concurrent.
    const auto concurrent = std::count_if(skewedLesson.steps.begin(), skewedLesson.steps.end(),
                                          [](const LessonStep& s) { return s.concurrent; });
    QVERIFY(concurrent > 0);
    const auto at = std::find_if(skewedLesson.steps.begin(), skewedLesson.steps.end(),
                                 [](const LessonStep& s) { return s.concurrent; });
    QVERIFY(QString::fromStdString(skewedLesson.explain(size_t(at - skewedLesson.steps.begin())))
                .contains("at the same time as the step before"));
  }

  void testFreshBackwardFollowsCausalityUnderSkew() {
    QTemporaryDir dir;
    const QString file = record(dir, {"example", "seed"}, "seed.ddprun");
    QVERIFY(!file.isEmpty());
    RunStoreReader run(file.toStdString());
    const Lesson plain = distributedLesson(run);
    QVERIFY(!plain.steps.empty());
    QVERIFY2(causalityProblem(plain).isEmpty(), qPrintable(causalityProblem(plain)));
    for (const int sign : {1, -1}) {
      const Lesson l = distributedLesson(run, {{0, sign * 5'000'000}});
      QCOMPARE(l.steps.size(), plain.steps.size());
      QVERIFY2(causalityProblem(l).isEmpty(), qPrintable(causalityProblem(l)));
      QVERIFY(!causalityProblem(byClock(l)).isEmpty());
    }
  }
};

DDPSCOPE_TEST_MAIN(TestCausalOrder)
#include "tst_causal_order.moc"
