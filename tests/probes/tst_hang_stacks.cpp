// The hang verdict's words on stacks (hang_stacks.h), on captures the test writes: which
// frames are the user's, the culprit named first with its caller, a waiting rank with the
// line that called its collective, a capture older than the rank's last event left out, and
// the stacks a dump's records keep shown as captures are.
#include <QtTest/QtTest>

#include "hang_stacks.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

StackFrame frame(const char* name, const char* file, int64_t line, const char* code = "") {
  return {name, file, line, code};
}

StackCapture capture(int rank, int64_t t_ns, std::vector<StackFrame> frames, int64_t stalled_ns = 0) {
  StackCapture c;
  c.rank = rank;
  c.t_ns = t_ns;
  c.stalled_ns = stalled_ns;
  c.reason = stalled_ns > 0 ? "no progress" : "allreduce #5 failed: timeout";
  c.threads.push_back({1, "MainThread", std::move(frames), 0});
  return c;
}

RankHangState rank_at(int rank, int64_t last_event_ns, bool waiting) {
  RankHangState st;
  st.rank = rank;
  st.last_event_ns = last_event_ns;
  st.last_event = "optimizer 'optimizer step'";
  if (waiting) st.blocked_in = PendingCollective{"allreduce", 5, 1024, last_event_ns};
  return st;
}

}  // namespace

class TestHangStacks : public QObject {
  Q_OBJECT

 private slots:
  void testLibraryFramesAreTold() {
    QVERIFY(is_library_frame(frame("backward", "/usr/lib/python3/dist-packages/torch/_tensor.py", 487)));
    QVERIFY(is_library_frame(frame("join", "/usr/lib/python3.11/threading.py", 1112)));
    QVERIFY(is_library_frame(frame("_call", "/home/u/venv/lib/python3.11/site-packages/x.py", 3)));
    QVERIFY(is_library_frame(frame("record", "/opt/ddpscope/share/ddpscope/python/ddpscope/_stacks.py", 9)));
    QVERIFY(is_library_frame(frame("_find", "<frozen importlib._bootstrap>", 1)));
    QVERIFY(!is_library_frame(frame("main", "/home/u/train.py", 22)));
    // PyTorch's tree as its flight records name it; a user's own folder called torch is theirs.
    QVERIFY(is_library_frame(frame("all_reduce", "torch/distributed/distributed_c10d.py", 2050)));
    QVERIFY(is_library_frame(frame("forward", "/opt/pytorch/torch/nn/parallel/distributed.py", 1305)));
    QVERIFY(!is_library_frame(frame("main", "/home/u/torch/train.py", 22)));
  }

  // Dumps: the finding's collective as each member's record keeps it becomes that rank's
  // stack where the rank sent none; a rank's own capture wins, and a record without frames
  // (or no record: the rank never called it) gives none. The verdict's sentences leave them
  // out (the flight verdict already names the lines).
  void testTheFindingsRecordsGiveStacksWhereRanksSentNone() {
    HangReport report;
    GroupFinding g;
    g.group = "0";
    g.verdict = "Group '0' collective #6: ...";
    for (int r : {0, 1, 2}) {
      CollectiveRow call;
      call.rank = r;
      call.op = r == 2 ? "all_gather" : "all_reduce";
      call.collective_seq = 6;
      call.t_started_ns = 1000 + r;
      if (r != 1)
        call.frames = {frame(call.op.c_str(), "torch/distributed/distributed_c10d.py", 2050),
                       frame("train_step", "train.py", r == 2 ? 61 : 58)};
      g.calls[r] = call;
    }
    report.flight.groups = {g, GroupFinding{}};  // a group without a finding adds nothing
    report.stacks = {capture(0, 5000, {frame("main", "/home/u/train.py", 22)})};
    add_flight_record_stacks(report);
    QCOMPARE(report.stacks.size(), size_t{2});
    QCOMPARE(report.stacks[0].threads[0].frames[0].name, std::string("main"));  // rank 0's own
    const StackCapture& two = report.stacks[1];
    QCOMPARE(two.rank, 2);
    QCOMPARE(two.t_ns, int64_t{1002});
    QVERIFY(stack_is_current(report, two));
    QCOMPARE(code_position(two.threads[0]), std::string("train_step at train.py:61"));
    QCOMPARE(stack_text(two, false, 0), std::string("rank 2's call of all_gather #6 in group '0', as its flight "
                                                    "record keeps it:\n    train_step at train.py:61\n    (1 frame "
                                                    "of libraries: hang --all-frames lists them)\n"));
    report.culprits = {2};
    QCOMPARE(stacks_sentences(report), std::string());
  }

  void testTheCulpritFirstThenTheWaitingRank() {
    HangReport report;
    report.ranks = {rank_at(0, 1000, true), rank_at(1, 1000, false)};
    report.culprits = {1};
    report.stacks = {
        capture(0, 6000,
                {frame("backward", "/usr/lib/python3/dist-packages/torch/_tensor.py", 487),
                 frame("main", "/home/u/train.py", 22, "loss.backward()"), frame("<module>", "/home/u/train.py", 30)}),
        capture(1, 3000,
                {frame("load_batch", "/home/u/train.py", 15, "time.sleep(30)"), frame("main", "/home/u/train.py", 19),
                 frame("<module>", "/home/u/train.py", 30)},
                2'000'000'000)};
    QCOMPARE(QString::fromStdString(stacks_sentences(report)),
             QString("Rank 1 is in load_batch at train.py:15 (`time.sleep(30)`), called from main at train.py:19 "
                     "(its stack, after 2.0 s without progress; past its last event above). Rank 0 waits in "
                     "allreduce #5, called from main at train.py:22 (`loss.backward()`)."));
  }

  // A stack taken before the rank's last event is where it was, not where it is.
  void testAnOldCaptureIsLeftOut() {
    HangReport report;
    report.ranks = {rank_at(0, 9000, true)};
    report.stacks = {capture(0, 5000, {frame("main", "/home/u/train.py", 22)})};
    QVERIFY(!stack_is_current(report, report.stacks[0]));
    QCOMPARE(stacks_sentences(report), std::string());
    QCOMPARE(stacks_json(report)[0]["current"].get<bool>(), false);
  }

  void testOnlyLibraryFramesSayNothing() {
    ThreadStack t{1, "worker", {frame("run", "/usr/lib/python3.11/threading.py", 975)}, 0};
    QCOMPARE(user_frame(t), -1);
    QCOMPARE(code_position(t), std::string());
  }

  // An engine rank's native frames: the training loops (ddpscope::apps) and main are its own
  // code; the engine's machinery, the C++ library, MPI and libc are libraries. A frame without
  // a line is named with its function, less its parameters, and its program.
  void testNativeFramesOfOurEngine() {
    const bool native = true;
    QVERIFY(!is_library_frame(frame("ddpscope::apps::Trainer::step()", "/b/bin/ddpscope-worker", 0), native));
    QVERIFY(!is_library_frame(frame("main", "/b/bin/ddpscope-worker", 0), native));
    QVERIFY(!is_library_frame(
        frame("void ddpscope::apps::(anonymous namespace)::train_loop<ddpscope::apps::Trainer>(int)", "/b/w", 0),
        native));
    QVERIFY(
        is_library_frame(frame("ddpscope::ddp::Reducer::finalize_backward()", "/b/bin/ddpscope-worker", 0), native));
    QVERIFY(is_library_frame(frame("std::this_thread::__sleep_for(std::chrono::seconds)", "/b/w", 0), native));
    QVERIFY(is_library_frame(frame("PMPI_Allreduce", "/usr/lib/x86_64-linux-gnu/libmpi.so.40", 0), native));
    QVERIFY(is_library_frame(frame("__futex_abstimed_wait_common", "./nptl/futex-internal.c", 57), native));
    QVERIFY(is_library_frame(frame("??", "/b/w", 0), native));
    ThreadStack t{7,
                  "ddpscope-worker",
                  {frame("clock_nanosleep", "../sysdeps/unix/sysv/linux/clock_nanosleep.c", 48),
                   frame("ddpscope::apps::Trainer::inject_stall_if_asked()", "/b/bin/ddpscope-worker", 0),
                   frame("ddpscope::apps::Trainer::step()", "/b/bin/ddpscope-worker", 0)},
                  0};
    t.native = true;
    QCOMPARE(code_position(t), std::string("ddpscope::apps::Trainer::inject_stall_if_asked in ddpscope-worker, called "
                                           "from ddpscope::apps::Trainer::step in ddpscope-worker"));
  }

  // A run without events has no start: a capture's time is then not counted from 0.
  void testAStackOfARunWithoutEventsHasNoTimeIntoTheRun() {
    const StackCapture c = capture(3, 48'000'000'000'000, {frame("wait_for_the_ask", "/tmp/idle_rank.py", 21)});
    QCOMPARE(stack_text(c, false, 0).substr(0, 40), std::string("rank 3's stack (allreduce #5 failed: tim"));
    QVERIFY(stack_text(c, false, 47'999'000'000'000).rfind("rank 3's stack, 1.0 s into the run (", 0) == 0);
  }

  void testTheLatestCaptureOfEachRank() {
    const auto latest = latest_stacks({capture(1, 10, {}), capture(0, 5, {}), capture(1, 30, {}), capture(1, 20, {})});
    QCOMPARE(latest.size(), size_t{2});
    QCOMPARE(latest[0].rank, 0);
    QCOMPARE(latest[1].t_ns, int64_t{30});
  }

  void testACaptureWhoseMainThreadDidNotAnswerDoesNotHideAnEarlierOne() {
    const StackFrame own{"main", "train.cpp", 12, ""};
    StackCapture silent = capture(1, 40, {});
    silent.threads.front().answered = false;  // a loaded machine, or the process going down
    StackCapture empty = capture(1, 50, {});  // answered, yet no frame
    const auto latest = latest_stacks({capture(1, 10, {own}), capture(1, 30, {own}), silent, empty});
    QCOMPARE(latest.size(), size_t{1});
    QCOMPARE(latest[0].t_ns, int64_t{30});
    // None that tells: the latest still stands for the rank.
    QCOMPARE(latest_stacks({capture(1, 20, {}), silent}).back().t_ns, int64_t{40});
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestHangStacks)
#include "tst_hang_stacks.moc"
