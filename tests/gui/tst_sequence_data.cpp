// The Messages page's data: every send paired with its receive, also while the run
// file is still being written.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <set>

#include "gui_test_runs.h"
#include "sequence_data.h"

using namespace ddpscope::gui;

class TestSequenceData : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const char* name) { return dir_.filePath(name).toStdString(); }

  // A small RPC exchange, as seed 000's example makes it: worker 0 calls add on worker 1
  // (1000 -> 1100) and gets the answer (1200 -> 1300); in context 7 the gradients go to
  // worker 1 and back (2000 -> 2100, 2200 -> 2300, with the answers); an RRef fetch; and a
  // call still on its way (sent at 3000, never received).
  static std::vector<testing::TestMessage> seedMessages() {
    return {{0, 1, 1000, 1100, 1, -1, 1, "add", 210},
            {1, 0, 1200, 1300, 1, -1, 2, "add", 132},
            {0, 1, 2000, 2100, 2, 7, 1, "_ddpscope.dist_backward", 204},
            {1, 0, 2200, 2300, (int64_t{1} << 48) | 2, 7, 1, "_ddpscope.dist_backward", 264},
            {0, 1, 2350, 2400, (int64_t{1} << 48) | 2, 7, 2, "_ddpscope.dist_backward", 96},
            {1, 0, 2450, 2500, 2, 7, 2, "_ddpscope.dist_backward", 105},
            {0, 1, 2600, 2650, 3, -1, 5, "rref_fetch", 60},
            {0, 1, 2700, 2750, 4, 7, 1, "_ddpscope.release_context", 130},
            {1, 0, 2800, 2900, 9, -1, 3, "boom", 80},
            {0, 1, 3000, -1, 5, -1, 1, "sleep_ms", 120}};
  }

 private slots:
  void testSequencePairsEverySendWithItsReceive() {
    const std::string file = path("messages.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file);
      w.begin_run({R"({"job":"example"})", 2, "mpi", "example"});
      testing::write_messages(w, seedMessages(), 2);
      w.end_run("finished");
    }
    ddpscope::probes::RunStoreReader reader(file);
    const SequenceData d = load_sequence(reader, 2);
    const auto expected = seedMessages();
    QCOMPARE(d.arrows.size(), expected.size());
    QCOMPARE(d.workers, 2);
    for (size_t i = 0; i < expected.size(); ++i) {
      const auto& a = d.arrows[i];
      QCOMPARE(a.src, expected[i].src);
      QCOMPARE(a.dst, expected[i].dst);
      QCOMPARE(a.t_send_ns, expected[i].t_send);
      QCOMPARE(a.t_recv_ns, expected[i].t_recv);  // both ends joined, or -1 in flight
      QCOMPARE(a.bytes, expected[i].bytes);
      QCOMPARE(d.name_of(a.name), expected[i].name);
    }
    QCOMPARE(d.in_flight, int64_t{1});
    QCOMPARE(d.longest_ns, int64_t{100});
    QCOMPARE(d.begin_ns, int64_t{1000});
    QCOMPARE(d.end_ns, int64_t{3000});
    // Kinds: user call and answer, the gradient messages (their answers are responses),
    // the RRef fetch, ddpscope's own release, an error.
    const std::vector<ArrowKind> kinds = {ArrowKind::Request,  ArrowKind::Response, ArrowKind::Gradient,
                                          ArrowKind::Gradient, ArrowKind::Response, ArrowKind::Response,
                                          ArrowKind::RRef,     ArrowKind::Internal, ArrowKind::Error,
                                          ArrowKind::Request};
    for (size_t i = 0; i < kinds.size(); ++i)
      QCOMPARE(static_cast<int>(d.arrows[i].kind), static_cast<int>(kinds[i]));
    QCOMPARE(d.contexts.size(), size_t{1});
    QCOMPARE(d.contexts.at(7), (std::set<int>{0, 1}));
    const std::string text = describe_arrow(d, d.arrows[0]);
    QVERIFY2(text.find("call of 'add' from worker 0 to worker 1") != std::string::npos &&
                 text.find("210 B") != std::string::npos && text.find("0.1 us") != std::string::npos,
             text.c_str());
    QVERIFY(describe_arrow(d, d.arrows.back()).find("never received") != std::string::npos);

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
      const SequenceData d = load_sequence(reader, 2);
      QCOMPARE(d.arrows.size(), size_t{1});
      QCOMPARE(d.in_flight, int64_t{1});
    }
    testing::write_messages(w, {{0, 1, -1, 1100, 1, -1, 1, "add", 210}, {1, 0, 1200, 1300, 1, -1, 2, "add", 132}}, 2);
    ddpscope::probes::RunStoreReader reader(file);
    const SequenceData d = load_sequence(reader, 2);
    QCOMPARE(d.arrows.size(), size_t{2});
    QCOMPARE(d.in_flight, int64_t{0});
    QCOMPARE(d.arrows[0].t_recv_ns, int64_t{1100});
  }
};

QTEST_GUILESS_MAIN(TestSequenceData)
#include "tst_sequence_data.moc"
