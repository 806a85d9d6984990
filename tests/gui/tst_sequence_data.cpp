// The Messages page's data: every send paired with its receive, also while the run
// file is still being written.
#include <QtTest/QtTest>

#include <set>

#include "gui_test_runs.h"
#include "sequence_data.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestSequenceData : public ScratchTest {
  Q_OBJECT

 private slots:
  void testSequencePairsEverySendWithItsReceive() {
    const std::string file = path("messages.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file);
      w.begin_run({R"({"job":"example"})", 2, "mpi", "example"});
      testing::write_messages(w, testing::seed_messages(), 2);
      w.end_run("finished");
    }
    ddpscope::probes::RunStoreReader reader(file);
    const SequenceData d = loadSequence(reader, 2);
    const auto expected = testing::seed_messages();
    QCOMPARE(d.arrows.size(), expected.size());
    QCOMPARE(d.workers, 2);
    for (size_t i = 0; i < expected.size(); ++i) {
      const auto& a = d.arrows[i];
      QCOMPARE(a.src, expected[i].src);
      QCOMPARE(a.dst, expected[i].dst);
      QCOMPARE(a.t_send_ns, expected[i].t_send);
      QCOMPARE(a.t_recv_ns, expected[i].t_recv);  // both ends joined, or -1 in flight
      QCOMPARE(a.bytes, expected[i].bytes);
      QCOMPARE(d.nameOf(a.name), expected[i].name);
    }
    QCOMPARE(d.in_flight, int64_t{1});
    QCOMPARE(d.longest_ns, int64_t{100});
    QCOMPARE(d.begin_ns, int64_t{1000});
    QCOMPARE(d.end_ns, int64_t{3000});
    // Kinds: user call and answer, the gradient messages (their answers are responses),
    // the RRef fetch, ddpscope's own release, an error.
    const std::vector<ArrowKind> kinds = {
        ArrowKind::Request,  ArrowKind::Response, ArrowKind::Gradient, ArrowKind::Gradient, ArrowKind::Response,
        ArrowKind::Response, ArrowKind::RRef,     ArrowKind::Internal, ArrowKind::Error,    ArrowKind::Request};
    for (size_t i = 0; i < kinds.size(); ++i)
      QCOMPARE(static_cast<int>(d.arrows[i].kind), static_cast<int>(kinds[i]));
    QCOMPARE(d.contexts.size(), size_t{1});
    QCOMPARE(d.contexts.at(7), (std::set<int>{0, 1}));
    const std::string text = describeArrow(d, d.arrows[0]);
    QVERIFY2(text.find("call of 'add' from worker 0 to worker 1") != std::string::npos &&
                 text.find("210 B") != std::string::npos && text.find("0.1 us") != std::string::npos,
             text.c_str());
    QVERIFY(describeArrow(d, d.arrows.back()).find("never received") != std::string::npos);

    // Filters: context 7 only; worker 1's; gradients only.
    SequenceFilter f;
    f.ctx_id = 7;
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 5);
    f = SequenceFilter{};
    f.ctx_id = -1;
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 5);
    f = SequenceFilter{};
    f.kinds = 1u << static_cast<int>(ArrowKind::Gradient);
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 2);
    f = SequenceFilter{};
    f.worker = 2;  // no such worker: nothing
    QCOMPARE(std::count_if(d.arrows.begin(), d.arrows.end(), [&](const auto& a) { return f.accepts(a); }), 0);
    // The window of [2210, 2260] holds every arrow that may cross it: those starting
    // from 2110 (the longest flight back) to 2260.
    const auto [first, last] = d.window(2210, 2260);
    QCOMPARE(d.arrows[first].t_send_ns, int64_t{2200});
    QCOMPARE(last - first, size_t{1});
  }

  // A run still being written: the call in flight is joined once its receive arrives.
  void testSequenceOfARunStillBeingWritten() {
    const std::string file = path("growing_messages.ddprun");
    ddpscope::probes::RunStoreWriter w(file);
    w.begin_run({R"({"job":"example"})", 2, "mpi", "example"});
    testing::write_messages(w, {{0, 1, 1000, -1, 1, -1, 1, "add", 210}}, 2);
    {
      ddpscope::probes::RunStoreReader reader(file);
      const SequenceData d = loadSequence(reader, 2);
      QCOMPARE(d.arrows.size(), size_t{1});
      QCOMPARE(d.in_flight, int64_t{1});
    }
    testing::write_messages(w, {{0, 1, -1, 1100, 1, -1, 1, "add", 210}, {1, 0, 1200, 1300, 1, -1, 2, "add", 132}}, 2);
    ddpscope::probes::RunStoreReader reader(file);
    const SequenceData d = loadSequence(reader, 2);
    QCOMPARE(d.arrows.size(), size_t{2});
    QCOMPARE(d.in_flight, int64_t{0});
    QCOMPARE(d.arrows[0].t_recv_ns, int64_t{1100});
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSequenceData)
#include "tst_sequence_data.moc"
