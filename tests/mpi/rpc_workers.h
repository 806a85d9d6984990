// What every worker of the RPC tests serves (failing, chained, async, slow and RRef-making
// functions, its RRef counts, fault injection through the FaultTransport), and raw
// messages sent past the agent to test what it refuses.
#pragma once

#include <QtTest/QtTest>

#include <chrono>
#include <thread>
#include <zmq.hpp>
#include "eventually.h"
#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "mpi_test_main.h"
#include "fault_transport.h"
#include "rpc/rpc.h"
#include "rpc/zap_token_gate.h"
#include "rpc/shm_transport.h"
#include "rpc/tcp_transport.h"
#include "rpc/transport_choice.h"

namespace ddpscope::testing::rpc_workers {

using namespace std::chrono_literals;

inline std::shared_ptr<c10d::ProcessGroup> g_world;
// This worker's transport, wrapped so tests can delay and drop what it receives.
inline rpc::testing::FaultTransport* g_faults = nullptr;

inline void barrier() { g_world->barrier()->wait(); }

inline int64_t remote_owned(int worker) { return rpc::rpc_sync(worker, "test.owned").to_int(); }

inline void register_test_functions() {
  using rpc::Value;
  using rpc::ValueList;
  rpc::register_function("test.boom", [](const ValueList&) -> Value {
    throw Error("boom: the remote function failed", __FILE__, __LINE__);
  });
  // chain(k, t): k more hops to the next worker, adding 1 at each.
  rpc::register_function("test.chain", [](const ValueList& a) -> Value {
    const int64_t k = a.at(0).to_int();
    const Tensor& t = a.at(1).tensor();
    if (k == 0) return add_scalar(t, 1);
    const int next = (rpc::agent().self().id + 1) % static_cast<int>(rpc::agent().workers().size());
    Tensor r = rpc::rpc_sync(next, "test.chain", {Value(k - 1), Value(t)}).tensor();
    return add_scalar(r, 1);
  });
  // Answers later from another thread, without holding a pool thread meanwhile: the sum,
  // or the error it was asked for.
  rpc::register_async_function("test.async_add", [](const ValueList& a) {
    auto fut = std::make_shared<rpc::ValueFuture>();
    std::thread([fut, x = a.at(0).tensor(), y = a.at(1).tensor(), fail = a.at(2).to_bool()] {
      std::this_thread::sleep_for(50ms);
      if (fail) {
        fut->set_error(std::make_exception_ptr(Error("async boom", __FILE__, __LINE__)));
      } else {
        fut->mark_completed(Value(add(x, y)));
      }
    }).detach();
    return fut;
  });
  rpc::register_function("test.owned", [](const ValueList&) -> Value {
    return Value(static_cast<int64_t>(rpc::agent().rrefs().owned()));
  });
  rpc::register_function("test.pending", [](const ValueList&) -> Value {
    return Value(static_cast<int64_t>(rpc::agent().rrefs().pending()));
  });
  // An OwnerRRef made here, sent back to the caller (owner -> user).
  rpc::register_function("test.make_rref", [](const ValueList& a) -> Value { return Value(rpc::make_rref(a.at(0))); });
  // A UserRRef (or the OwnerRRef) received: its value, fetched here.
  rpc::register_function("test.to_here", [](const ValueList& a) -> Value { return a.at(0).rref().to_here(); });
  rpc::register_function("test.is_owner", [](const ValueList& a) -> Value { return Value(a.at(0).rref().is_owner()); });
  rpc::register_function("test.local_value", [](const ValueList& a) -> Value { return a.at(0).rref().local_value(); });
  rpc::register_function("test.slow_value", [](const ValueList& a) -> Value {
    std::this_thread::sleep_for(std::chrono::milliseconds(a.at(0).to_int()));
    return a.at(1);
  });
  rpc::register_function("test.inject_delay", [](const ValueList& a) -> Value {
    g_faults->delay_incoming(static_cast<rpc::wire::MessageType>(a.at(0).to_int()),
                             std::chrono::milliseconds(a.at(1).to_int()), static_cast<int>(a.at(2).to_int()));
    return Value();
  });
  rpc::register_function("test.inject_drop", [](const ValueList& a) -> Value {
    g_faults->drop_incoming(static_cast<rpc::wire::MessageType>(a.at(0).to_int()), static_cast<int>(a.at(1).to_int()));
    return Value();
  });
  rpc::register_function("test.stats", [](const ValueList&) -> Value {
    const auto s = rpc::agent().stats();
    return Value(ValueList{Value(static_cast<int64_t>(s.rejected_token)),
                           Value(static_cast<int64_t>(s.rejected_malformed)),
                           Value(static_cast<int64_t>(s.control_retries)), Value(s.last_rejection)});
  });
}

// Joins RPC as this rank's worker, serving the functions above through a FaultTransport.
inline void start_worker() {
  register_test_functions();
  rpc::RpcBackendOptions options;
  options.rpc_timeout = 20000ms;
  // One thread per agent: nested chains must still finish (the pool grows).
  options.num_worker_threads = 1;
  options.control_retry_interval = 100ms;
  options.wrap_transport = [](std::unique_ptr<rpc::Transport> inner) -> std::unique_ptr<rpc::Transport> {
    auto faults = std::make_unique<rpc::testing::FaultTransport>(std::move(inner));
    g_faults = faults.get();
    return faults;
  };
  rpc::init_rpc("", options, g_world);
}

// Sends raw frames to `worker`'s agent from a socket that is no worker's, in the framing
// of the job's transport (ZeroMQ's, or the TCP transport's).
inline void send_raw(int worker, const std::vector<std::string>& frames) {
  const std::string endpoint = rpc::agent().endpoint_of(worker);
  const bool shm = endpoint.rfind(rpc::ShmTransport::kScheme, 0) == 0;
  if (shm || endpoint.rfind(rpc::TcpTransport::kScheme, 0) == 0) {
    std::unique_ptr<rpc::Transport> t = rpc::open_transport(shm ? "shm" : "tcp", "127.0.0.1", 1 << 20);
    t->connect({endpoint});
    std::vector<rpc::OutgoingFrame> out;
    for (const std::string& f : frames)
      out.push_back({f.data(), f.size(), nullptr});
    t->send(0, std::move(out));  // a few bytes: the kernel (or the ring) has them before close()
    return;
  }
  static zmq::context_t ctx;
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 2000);
  // A holder of the job's token (ZeroMQ's handshake refuses others before any message).
  s.set(zmq::sockopt::plain_username, rpc::kRpcPlainUser);
  s.set(zmq::sockopt::plain_password, rpc::agent().token_for_tests());
  s.connect(rpc::agent().endpoint_of(worker));
  for (size_t i = 0; i < frames.size(); ++i)
    s.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

inline std::string header_bytes(rpc::wire::MessageType type, int src, int dst, uint32_t tensors) {
  rpc::wire::Header h;
  h.type = static_cast<uint8_t>(type);
  h.src = src;
  h.dst = dst;
  h.msg_id = 0xdead;
  h.num_tensors = tensors;
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h));
}

}  // namespace ddpscope::testing::rpc_workers
