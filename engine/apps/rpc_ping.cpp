#include "rpc_ping.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "worker_protocol.h"
#include "ddpscope/median.h"
#include "allocation_counter.h"
#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "probe.h"
#include "probe_session.h"
#include "rpc/rpc.h"
#include "rpc/transport_choice.h"

namespace ddpscope::apps {
namespace {

using Clock = std::chrono::steady_clock;

struct PeerResult {
  int worker;
  double allocations_per_call;
  double median_us;
  double p90_us;
  double throughput_mb_s;
};

PeerResult ping(int peer, const RpcPingOptions& o) {
  // Latency: seed 000's call, a 3x3 f32 add; or an echo of --echo-bytes bytes.
  Tensor small = o.echo_bytes > 0 ? Tensor::ones({std::max<int64_t>(1, o.echo_bytes / 4)}) : Tensor::ones({3, 3});
  const auto call = [&] {
    if (o.echo_bytes > 0)
      rpc::rpc_sync(peer, "echo", {small});
    else
      rpc::rpc_sync(peer, add, small, small);
  };
  for (int i = 0; i < 20; ++i)
    call();  // warm up connections and the pool
  std::vector<double> us;
  us.reserve(static_cast<size_t>(o.calls));
  const uint64_t allocs_before = allocations();
  for (int64_t i = 0; i < o.calls; ++i) {
    const auto t0 = Clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  const double allocs = static_cast<double>(allocations() - allocs_before) / static_cast<double>(o.calls);
  std::vector<double> sorted = us;
  std::sort(sorted.begin(), sorted.end());
  // Throughput: `bytes` each way per round trip, as many trips as make 256 MiB (at least 5).
  Tensor big = Tensor::ones({std::max<int64_t>(1, o.bytes / 4)});
  const int64_t trips = std::clamp<int64_t>((int64_t{256} << 20) / std::max<int64_t>(o.bytes, 1), 5, 2000);
  rpc::rpc_sync(peer, "echo", {big});
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < trips; ++i)
    rpc::rpc_sync(peer, "echo", {big});
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  return {peer, allocs, median(us), sorted[sorted.size() * 9 / 10],
          static_cast<double>(big.nbytes()) * static_cast<double>(trips) / s / 1e6};
}

// The transport's own floor: the median round trip of a bare ZeroMQ DEALER/ROUTER
// ping-pong between worker 0 and worker 1 over the address the agents use, with a
// message the size of an add call. What the agent adds is the difference. Collective:
// every rank calls it; ranks above 1 only take part in the endpoint exchange.
double transport_floor_us(c10d::ProcessGroup& group, int64_t calls) {
  constexpr int kWarmup = 20;
  constexpr size_t kMessageBytes = 180;  // token, header and body of a 3x3 add, roughly
  zmq::context_t context(1);
  zmq::socket_t socket(context, group.rank() == 1 ? zmq::socket_type::router : zmq::socket_type::dealer);
  socket.set(zmq::sockopt::linger, 0);
  // Rank 1 listens where its agent does, on a port of its own.
  Tensor endpoint = Tensor::zeros({32}, DType::I64);  // 256 bytes of text
  if (group.rank() == 1) {
    const std::string agent = rpc::endpoint_host_port(rpc::agent().endpoint());
    socket.bind("tcp://" + agent.substr(0, agent.rfind(':')) + ":0");
    const std::string mine = socket.get(zmq::sockopt::last_endpoint);
    std::memcpy(endpoint.raw_data(), mine.data(), std::min<size_t>(mine.size(), 255));
  }
  group.broadcast(endpoint, {.root = 1})->wait();
  const std::string where(static_cast<const char*>(endpoint.raw_data()));
  std::vector<double> us;
  if (group.rank() == 0) {
    socket.connect(where);
    std::vector<char> buffer(kMessageBytes, 'x');
    for (int64_t i = 0; i < kWarmup + calls; ++i) {
      const auto t0 = Clock::now();
      socket.send(zmq::buffer(buffer), zmq::send_flags::none);
      zmq::message_t reply;
      (void)socket.recv(reply, zmq::recv_flags::none);
      if (i >= kWarmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  } else if (group.rank() == 1) {
    for (int64_t i = 0; i < kWarmup + calls; ++i) {
      zmq::message_t identity, body;
      (void)socket.recv(identity, zmq::recv_flags::none);
      (void)socket.recv(body, zmq::recv_flags::none);
      socket.send(identity, zmq::send_flags::sndmore);
      socket.send(body, zmq::send_flags::none);
    }
  }
  return median(us);
}

}  // namespace

std::vector<std::string> rpc_ping_arguments(const RpcPingOptions& o) {
  std::vector<std::string> a = {"rpc-ping", "--bytes", std::to_string(o.bytes), "--calls", std::to_string(o.calls)};
  if (o.echo_bytes > 0) a.insert(a.end(), {"--echo-bytes", std::to_string(o.echo_bytes)});
  if (o.json) a.push_back("--json");
  return a;
}

int rpc_ping_worker(int argc, char** argv) {
  CLI::App app{"ddpscope-worker rpc-ping: one rank of an RPC ping-pong job"};
  RpcPingOptions o;
  app.add_option("--bytes", o.bytes)->check(CLI::Range(int64_t{4}, int64_t{1} << 32));
  app.add_option("--calls", o.calls)->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  app.add_option("--echo-bytes", o.echo_bytes)->check(CLI::Range(int64_t{0}, int64_t{1} << 32));
  app.add_flag("--json", o.json);
  CLI11_PARSE(app, argc, argv);
  auto group = c10d::init_process_group();
  auto probes_session = probes::ProbeSession::from_environment(group->rank(), "cpu");
  probes::set_thread_name("rpc-ping");
  rpc::init_rpc("", {}, group);
  emit_group_up(group->rank(), group->size(), "rpc-ping");
  const double floor_us = group->size() > 1 ? transport_floor_us(*group, o.calls) : 0.0;
  if (group->rank() == 0) {
    std::vector<PeerResult> results;
    for (int peer = group->size() == 1 ? 0 : 1; peer < group->size(); ++peer)
      results.push_back(ping(peer, o));
    if (o.json) {
      nlohmann::json peers = nlohmann::json::array();
      std::vector<double> medians, rates;
      for (const auto& r : results) {
        peers.push_back({{"worker", r.worker},
                         {"median_round_trip_us", r.median_us},
                         {"p90_round_trip_us", r.p90_us},
                         {"throughput_mb_s", r.throughput_mb_s},
                         {"allocations_per_call", r.allocations_per_call}});
        medians.push_back(r.median_us);
        rates.push_back(r.throughput_mb_s);
      }
      const nlohmann::json out = {{"workers", group->size()},
                                  {"transport", rpc::transport_kind("")},
                                  {"bytes", o.bytes},
                                  {"calls", o.calls},
                                  {"median_round_trip_us", median(medians)},
                                  {"throughput_mb_s", median(rates)},
                                  {"zeromq_round_trip_us", floor_us},
                                  {"peers", peers}};
      std::printf("%s\n", out.dump().c_str());
    } else {
      const std::string call =
          o.echo_bytes > 0 ? "an echo of " + std::to_string(o.echo_bytes) + " bytes" : "a 3x3 f32 add";
      std::printf("rpc-ping: %d workers over %s; %lld round trips of %s per peer; echo of %lld bytes\n", group->size(),
                  rpc::transport_kind("").c_str(), static_cast<long long>(o.calls), call.c_str(),
                  static_cast<long long>(o.bytes));
      for (const auto& r : results) {
        std::printf(
            "  worker0 -> worker%d: round trip median %.1f us, p90 %.1f us; throughput %.0f MB/s;"
            " %.1f allocations per call on worker0\n",
            r.worker, r.median_us, r.p90_us, r.throughput_mb_s, r.allocations_per_call);
      }
      if (floor_us > 0) {
        const bool zmq = rpc::transport_kind("") == "zmq";
        std::printf("  bare ZeroMQ round trip worker0 -> worker1 (%s): median %.1f us\n",
                    zmq ? "the transport's floor" : "ZeroMQ's floor, for comparison", floor_us);
      }
    }
    std::fflush(stdout);
  }
  rpc::shutdown(true);
  if (probes_session) probes_session->flush();
  emit_rank_end(group->rank(), probes_session ? probes_session->shipped() : 0,
                probes_session ? probes_session->dropped() : 0);
  return 0;
}

}  // namespace ddpscope::apps
