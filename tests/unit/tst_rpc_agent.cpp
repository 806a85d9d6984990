// The RPC agent in one process: three agents on an in-process transport (no sockets, no
// mpirun), so calls, errors, timeouts, lost peers, dropped control messages, foreign
// messages and the graceful shutdown's vote are tested quickly and alone. tst_rpc runs
// the same agent over ZeroMQ between real processes.
#include <QtTest/QtTest>

#include <chrono>
#include <thread>

#include "eventually.h"
#include "autograd/ops.h"
#include "fault_transport.h"
#include "loopback_transport.h"
#include "rpc/function_registry.h"
#include "rpc/rpc_agent.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace std::chrono_literals;
using rpc::Value;
using rpc::ValueList;

namespace {

constexpr int kWorkers = 3;

// A job of kWorkers agents on one hub; worker k's transport is wrapped for faults.
struct Job {
  std::shared_ptr<rpc::testing::LoopbackHub> hub = std::make_shared<rpc::testing::LoopbackHub>(kWorkers);
  std::vector<rpc::testing::FaultTransport*> faults;
  std::vector<std::shared_ptr<rpc::RpcAgent>> agents;

  explicit Job(rpc::Milliseconds timeout = 5000ms) {
    rpc::WorkerSetup setup;
    setup.token = "job-token";
    for (int k = 0; k < kWorkers; ++k) {
      setup.workers.push_back({"w" + std::to_string(k), k});
      setup.endpoints.push_back("loopback://" + std::to_string(k));
    }
    for (int k = 0; k < kWorkers; ++k) {
      setup.self = k;
      rpc::RpcBackendOptions options;
      options.rpc_timeout = timeout;
      options.control_retry_interval = 50ms;
      auto faults = std::make_unique<rpc::testing::FaultTransport>(hub->transport(k));
      this->faults.push_back(faults.get());
      agents.push_back(rpc::RpcAgent::create(setup, options, std::move(faults)));
    }
    for (auto& a : agents)
      a->start_receiving();
  }
  ~Job() {
    for (auto& a : agents)
      a->shutdown(false);
  }
  rpc::RpcAgent& operator[](int k) { return *agents[static_cast<size_t>(k)]; }
};

void register_functions() {
  rpc::register_function("t.add",
                         [](const ValueList& a) -> Value { return Value(a.at(0).to_int() + a.at(1).to_int()); });
  rpc::register_function("t.boom", [](const ValueList&) -> Value { throw Error("boom", __FILE__, __LINE__); });
  rpc::register_function("t.sleep", [](const ValueList& a) -> Value {
    std::this_thread::sleep_for(std::chrono::milliseconds(a.at(0).to_int()));
    return Value(a.at(0).to_int());
  });
  rpc::register_function("t.echo", [](const ValueList& a) -> Value { return a.at(0); });
}

}  // namespace

class TestRpcAgent : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { register_functions(); }

  void testCallsGoBothWaysWithTensors() {
    Job job;
    QCOMPARE(job[0].call(1, "t.add", {Value(int64_t{2}), Value(int64_t{40})}, 0ms)->wait().to_int(), int64_t{42});
    QCOMPARE(job[2].call(0, "t.add", {Value(int64_t{1}), Value(int64_t{1})}, 0ms)->wait().to_int(), int64_t{2});
    // A tensor past the zero-copy size travels as its own frame and comes back equal.
    Tensor big = Tensor::ones({100000});
    Tensor back = job[0].call(2, "t.echo", {Value(big)}, 0ms)->wait().tensor();
    QCOMPARE(back.numel(), int64_t{100000});
    QCOMPARE(back.to_vector<float>()[99999], 1.0f);
    QVERIFY(job[1].stats().calls_served >= 1);
    QCOMPARE(job[1].endpoint(), std::string("loopback://1"));
  }

  void testRemoteErrorNamesTheWorker() {
    Job job;
    try {
      job[0].call(1, "t.boom", {}, 0ms)->wait();
      QFAIL("no error");
    } catch (const rpc::RpcError& e) {
      QVERIFY2(QString(e.what()).contains("Error on worker 1 (w1): boom"), e.what());
    }
    try {
      job[0].call(2, "t.nothing", {}, 0ms)->wait();
      QFAIL("no error");
    } catch (const rpc::RpcError& e) {
      QVERIFY2(QString(e.what()).contains("unknown function 't.nothing'"), e.what());
    }
  }

  void testTimeoutThenLateReplyIsDropped() {
    Job job;
    const auto start = std::chrono::steady_clock::now();
    try {
      job[0].call(1, "t.sleep", {Value(int64_t{400})}, 100ms)->wait();
      QFAIL("no timeout");
    } catch (const rpc::RpcError& e) {
      QVERIFY2(QString(e.what()).contains("the call of 't.sleep' to w1 (id 1) got no answer within 100 ms"), e.what());
    }
    QVERIFY(std::chrono::steady_clock::now() - start < 390ms);
    QVERIFY(eventually([&] { return job[0].stats().late_replies == 1; }));
  }

  void testLostPeerFailsItsCallsAtOnce() {
    Job job;
    auto waiting = job[0].call(1, "t.sleep", {Value(int64_t{1500})}, 10000ms);
    std::this_thread::sleep_for(50ms);
    const auto start = std::chrono::steady_clock::now();
    job.hub->cut_off(1);
    try {
      waiting->wait();
      QFAIL("no error");
    } catch (const rpc::RpcError& e) {
      QVERIFY2(QString(e.what()).contains("the connection to w1 (id 1) broke after"), e.what());
    }
    QVERIFY(std::chrono::steady_clock::now() - start < 1000ms);
    try {
      job[0].call(1, "t.add", {Value(int64_t{1}), Value(int64_t{1})}, 0ms);
      QFAIL("a call to a lost worker was sent");
    } catch (const rpc::RpcError& e) {
      QVERIFY2(QString(e.what()).contains("cannot send the call of 't.add' to w1 (id 1): its connection broke"),
               e.what());
    }
    // The others are unaffected.
    QCOMPARE(job[0].call(2, "t.add", {Value(int64_t{1}), Value(int64_t{2})}, 0ms)->wait().to_int(), int64_t{3});
  }

  void testDroppedControlMessagesAreRetried() {
    Job job;
    job.faults[1]->drop_incoming(rpc::wire::MessageType::RRefUserDelete, 2);
    {
      rpc::RRef r = job[0].remote(1, "t.echo", {Value("x")}, 0ms);
      QCOMPARE(job[0].fetch(*r.impl(), 0ms)->wait().str(), std::string("x"));
      QCOMPARE(job[1].rrefs().owned(), size_t{1});
    }
    QVERIFY(eventually([&] { return job[1].rrefs().owned() == 0; }));
    QCOMPARE(job.faults[1]->dropped(), 2);
    QVERIFY(job[0].stats().control_retries >= 2);
  }

  void testDelayedMessagesArriveLater() {
    Job job;
    job.faults[1]->delay_incoming(rpc::wire::MessageType::Call, 300ms, 1);
    const auto start = std::chrono::steady_clock::now();
    QCOMPARE(job[0].call(1, "t.add", {Value(int64_t{1}), Value(int64_t{1})}, 0ms)->wait().to_int(), int64_t{2});
    QVERIFY(std::chrono::steady_clock::now() - start >= 300ms);
  }

  void testForeignMessagesAreRefusedAndCounted() {
    Job job;
    rpc::wire::Header h;
    h.type = static_cast<uint8_t>(rpc::wire::MessageType::Call);
    h.src = 0;
    h.dst = 1;
    rpc::wire::BodyWriter body;
    body.list(2);
    body.string("t.add");
    body.list(0);
    const std::string header(reinterpret_cast<const char*>(&h), sizeof(h));
    job.hub->inject(1, {"wrong-token", header, body.take()});
    job.hub->inject(1, {"job-token", "short"});
    QVERIFY(eventually([&] { return job[1].stats().rejected_token == 1 && job[1].stats().rejected_malformed == 1; }));
    QCOMPARE(job[1].stats().calls_served, uint64_t{0});
    QCOMPARE(job[0].call(1, "t.add", {Value(int64_t{1}), Value(int64_t{1})}, 0ms)->wait().to_int(), int64_t{2});
  }

  // Each worker shuts down from its own thread; the votes to worker 0 agree only once
  // the call in flight has been answered.
  void testGracefulShutdownWaitsForCallsInFlight() {
    Job job;
    auto slow = job[2].call(1, "t.sleep", {Value(int64_t{300})}, 0ms);
    std::vector<std::thread> threads;
    for (int k = 0; k < kWorkers; ++k)
      threads.emplace_back([&job, k] { job[k].shutdown(true); });
    for (auto& t : threads)
      t.join();
    QCOMPARE(slow->wait().to_int(), int64_t{300});
    for (int k = 0; k < kWorkers; ++k)
      QVERIFY(!job[k].running());
  }

  void testAVoteAnsweredLateIsVotedAgain() {
    // Worker 0 keeps working several RPC timeouts after the others called shutdown, and
    // the first votes reach it after their callers' timeout (a loaded machine): the voters
    // vote again and keep serving worker 0 until it shuts down too. (They stopped at the
    // first late answer, and worker 0's next call found them gone.)
    Job job(200ms);
    job.faults[0]->delay_incoming(rpc::wire::MessageType::Call, 300ms, 2);
    std::vector<std::thread> voters;
    for (int k = 1; k < kWorkers; ++k)
      voters.emplace_back([&job, k] { job[k].shutdown(true); });
    std::this_thread::sleep_for(800ms);
    for (int k = 1; k < kWorkers; ++k) {
      QVERIFY(job[k].running());
      QCOMPARE(job[0].call(k, "t.add", {Value(int64_t{k}), Value(int64_t{1})}, 0ms)->wait().to_int(), int64_t{k + 1});
    }
    job[0].shutdown(true);
    for (auto& t : voters)
      t.join();
    for (int k = 0; k < kWorkers; ++k)
      QVERIFY(!job[k].running());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRpcAgent)
#include "tst_rpc_agent.moc"
