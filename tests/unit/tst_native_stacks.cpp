// Every thread's native stack, captured in-process (probes/runtime/native_stacks.h): a
// thread parked in a function of this test is named with that function and its caller; a
// thread that blocks the asking signal is listed as not answering, without waiting for it; a
// 10,000-deep recursion keeps its innermost frames and counts the rest; the capture leaves
// out its own thread and those it is told to skip, and its JSON is what the run store reads.
// The stall watcher's wait for a capture under way (a failing rank's last flush) ends with it.
// This file is compiled with debug information (-g, tests/CMakeLists.txt) so that the capture's
// file:line is checked where debug information allows it.
#include <QtTest/QtTest>

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "native_stacks.h"
#include "stall_watcher.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

std::mutex g_park_mutex;
std::condition_variable g_park;
bool g_release = false;
std::atomic<int> g_parked{0};

// Waits until released: the frame the capture must find. Not inlined, so it keeps a symbol.
constexpr int64_t g_parked_function_first_line = __LINE__ + 1;
[[gnu::noinline]] void parked_in_a_known_function() {
  std::unique_lock<std::mutex> lock(g_park_mutex);
  ++g_parked;
  g_park.wait(lock, [] { return g_release; });
}

[[gnu::noinline]] void calls_the_parked_function() {
  parked_in_a_known_function();
  asm volatile("");  // keeps the call from becoming a tail call
}

[[gnu::noinline]] int recurse_then_park(int depth) {
  if (depth == 0) {
    parked_in_a_known_function();
    return 0;
  }
  const int below = recurse_then_park(depth - 1);
  asm volatile("");
  return below + 1;
}

void release_all() {
  {
    std::lock_guard<std::mutex> lock(g_park_mutex);
    g_release = true;
  }
  g_park.notify_all();
}

void wait_parked(int count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (g_parked.load() < count && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  // The last one counted itself before waiting: give it time to reach the wait.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

const NativeThreadStack* named(const std::vector<NativeThreadStack>& threads, const std::string& name) {
  for (const auto& t : threads)
    if (t.name == name) return &t;
  return nullptr;
}

// The frame of `function` itself (not of a template instantiated for it, such as the
// condition variable's wait with its predicate, which names it among its arguments).
int index_of(const NativeThreadStack& t, const std::string& function) {
  for (size_t i = 0; i < t.frames.size(); ++i) {
    std::string name = t.frames[i].function;
    if (name.rfind("(anonymous namespace)::", 0) == 0) name = name.substr(23);
    if (name.rfind(function, 0) == 0) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

class TestNativeStacks : public QObject {
  Q_OBJECT

 private slots:
  void init() {
    g_release = false;
    g_parked = 0;
  }
  void cleanup() { release_all(); }

  void testAParkedThreadIsNamedWithItsFunctionAndCaller() {
    std::thread parked([] {
      pthread_setname_np(pthread_self(), "parked");
      calls_the_parked_function();
    });
    wait_parked(1);
    const auto threads = capture_native_stacks({});
    release_all();
    parked.join();
    const NativeThreadStack* t = named(threads, "parked");
    QVERIFY2(t, "no thread named 'parked' in the capture");
    QVERIFY(t->answered);
    const int at = index_of(*t, "parked_in_a_known_function");
    QVERIFY2(at >= 0, qPrintable(QString::fromStdString(native_stacks_json(threads))));
    QVERIFY(index_of(*t, "calls_the_parked_function") > at);
    // Innermost first: the wait in the C library comes before the test's function.
    QVERIFY(at > 0);
    QCOMPARE(t->omitted, int64_t{0});
    // The main thread first, and not the capturing one (this thread is the main thread here).
    QVERIFY(threads.empty() || threads.front().tid != static_cast<int64_t>(getpid()));
  }

  // With debug information the frame names this file and a line inside the parked function,
  // not the line of the condition variable's wait inlined into it (which comes first, as a
  // frame of its own).
  void testAFrameWithLineTablesNamesItsFileAndLine() {
    std::thread parked([] {
      pthread_setname_np(pthread_self(), "lined");
      calls_the_parked_function();
    });
    wait_parked(1);
    const auto threads = capture_native_stacks({});
    release_all();
    parked.join();
    const NativeThreadStack* t = named(threads, "lined");
    QVERIFY(t);
    const int at = index_of(*t, "parked_in_a_known_function");
    QVERIFY(at >= 0);
    const NativeFrame& frame = t->frames[static_cast<size_t>(at)];
    const QString where = QString::fromStdString(frame.file) + ":" + QString::number(frame.line);
    QVERIFY2(QString::fromStdString(frame.file).endsWith("tst_native_stacks.cpp"), qPrintable(where));
    QVERIFY2(frame.line >= g_parked_function_first_line && frame.line <= g_parked_function_first_line + 4,
             qPrintable(where));
    QVERIFY2(
        at > 0 && QString::fromStdString(t->frames[static_cast<size_t>(at - 1)].file).contains("condition_variable"),
        qPrintable(QString::fromStdString(native_stacks_json(threads))));
  }

  void testAThreadThatBlocksTheSignalDoesNotAnswer() {
    std::thread blocking([] {
      pthread_setname_np(pthread_self(), "blocking");
      sigset_t all;
      sigfillset(&all);
      pthread_sigmask(SIG_BLOCK, &all, nullptr);
      parked_in_a_known_function();
    });
    wait_parked(1);
    const auto started = std::chrono::steady_clock::now();
    // Five seconds to answer: the capture must see the blocked signal in the thread's mask and
    // not wait for it (ZeroMQ's threads block every signal; waiting cost each capture 400 ms).
    const auto threads = capture_native_stacks({.answer_ms = 5000});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    release_all();
    blocking.join();
    const NativeThreadStack* t = named(threads, "blocking");
    QVERIFY(t);
    QVERIFY(!t->answered);
    QVERIFY(t->frames.empty());
    QVERIFY2(seconds < 2.5, qPrintable(QString::number(seconds)));
    QVERIFY(native_stacks_json(threads).find("\"answered\":false") != std::string::npos);
  }

  void testADeepRecursionKeepsItsInnermostFramesAndCountsTheRest() {
    std::thread deep([] {
      pthread_setname_np(pthread_self(), "deep");
      recurse_then_park(10000);
    });
    wait_parked(1);
    const auto threads = capture_native_stacks({.max_frames = 48});
    release_all();
    deep.join();
    const NativeThreadStack* t = named(threads, "deep");
    QVERIFY(t);
    QCOMPARE(t->frames.size(), size_t{48});
    QVERIFY2(t->omitted >= 10000 - 48, qPrintable(QString::number(t->omitted)));
    QVERIFY(index_of(*t, "recurse_then_park") > 0);
  }

  void testTheCaptureSkipsTheThreadsItIsTold() {
    std::atomic<int64_t> tid{0};
    std::thread parked([&tid] {
      pthread_setname_np(pthread_self(), "skipped");
      tid = static_cast<int64_t>(syscall(SYS_gettid));
      parked_in_a_known_function();
    });
    wait_parked(1);
    const auto threads = capture_native_stacks({}, {tid.load()});
    release_all();
    parked.join();
    QVERIFY(!named(threads, "skipped"));
    QVERIFY(!threads.empty());  // this process has others (Qt's, the test's watchdog)
  }

  // A rank that fails its job at a collective's timeout flushes and aborts: the flush first
  // waits for a stall's capture under way (its stacks would be lost with the process).
  void testWaitForCaptureReturnsOnlyOnceTheCaptureUnderWayEnded() {
    std::atomic<bool> started{false}, ended{false};
    StallWatcher watcher(0.1, {.progress = [] { return uint64_t{0}; },
                               .median_iteration_ns = [] { return int64_t{0}; },
                               .on_stall =
                                   [&](int64_t, int64_t, bool) {
                                     started = true;
                                     std::this_thread::sleep_for(std::chrono::milliseconds(400));
                                     ended = true;
                                   }});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!started && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    QVERIFY(started);
    watcher.wait_for_capture(std::chrono::seconds(10));
    QVERIFY(ended);
    // Nothing under way (one capture per stall): it returns at once, not after its limit.
    const auto before = std::chrono::steady_clock::now();
    watcher.wait_for_capture(std::chrono::seconds(20));
    QVERIFY(std::chrono::steady_clock::now() - before < std::chrono::seconds(10));
  }

  // The record's threads as the run store reads them: frames with file, line, function.
  void testTheJsonHasTheStoresFields() {
    NativeThreadStack t;
    t.tid = 7;
    t.name = "compute";
    t.frames = {{"ddpscope::apps::Trainer::step()", "/bin/ddpscope-worker", 0}, {"main", "main.cpp", 12}};
    t.omitted = 3;
    const auto json = nlohmann::json::parse(native_stacks_json({t}));
    QCOMPARE(json[0]["thread"].get<int64_t>(), int64_t{7});
    QCOMPARE(json[0]["frames"][1]["line"].get<int64_t>(), int64_t{12});
    QCOMPARE(json[0]["frames"][0]["function"].get<std::string>(), std::string("ddpscope::apps::Trainer::step()"));
    QCOMPARE(json[0]["omitted"].get<int64_t>(), int64_t{3});
    QVERIFY(!json[0].contains("answered"));
  }
};

DDPSCOPE_TEST_MAIN(TestNativeStacks)
#include "tst_native_stacks.moc"
