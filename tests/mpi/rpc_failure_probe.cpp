// A small mpirun program whose worker dies on purpose, for tst_rpc_failures:
//   killed  - 3 workers; worker 2 kills itself (SIGKILL) while serving a 5 s call of
//             worker 0's; worker 0 then calls worker 2 again (timeout 2 s) and worker 1
//             (which still serves).
//   dead-context - 3 workers; worker 2 opens a distributed autograd context, calls
//             worker 1 inside it and dies without releasing it; worker 0 watches how
//             many contexts worker 1 still holds.
// Each line it prints is "worker R: <what happened>"; run it with --enable-recovery so
// mpirun lets the survivors finish.
#include <chrono>
#include <csignal>
#include <future>
#include <cstdio>
#include <string>
#include <thread>

#include "autograd/ops.h"
#include "c10d/process_group.h"
#include "dist_autograd/dist_autograd.h"
#include "rpc/rpc.h"

using namespace ddpscope;
using Clock = std::chrono::steady_clock;

namespace {
std::promise<void> g_done;

void say(int rank, const std::string& what) {
  std::printf("worker %d: %s\n", rank, what.c_str());
  std::fflush(stdout);
}

// What worker 0 asks every worker for: "test.done" ends its wait, "test.contexts" says how
// many distributed autograd contexts it holds.
void register_test_functions() {
  rpc::register_function("test.done", [](const rpc::ValueList&) {
    g_done.set_value();
    return rpc::Value();
  });
  rpc::register_function("test.contexts",
                         [](const rpc::ValueList&) { return rpc::Value(dist_autograd::debug_info().contexts); });
}

// The dead-context mode: worker 2 dies inside a context, worker 0 watches worker 1 drop it.
[[noreturn]] void run_dead_context(c10d::ProcessGroup& world, int rank) {
  world.barrier()->wait();
  if (rank == 2) {
    dist_autograd::ContextGuard context;
    Tensor t = Tensor::ones({2}).set_requires_grad();
    rpc::rpc_sync("worker1", add, t, t);
    say(rank, "called worker1 in a context; killing myself");
    std::raise(SIGKILL);
  }
  if (rank == 0) {
    // Worker 1 holds worker 2's context until it learns worker 2 is gone.
    const auto t0 = Clock::now();
    int64_t held = -1;
    while (Clock::now() - t0 < std::chrono::seconds(10)) {
      held = rpc::rpc_sync("worker1", "test.contexts").to_int();
      if (held == 0 && Clock::now() - t0 > std::chrono::milliseconds(200)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    say(rank, "worker1 holds " + std::to_string(held) + " contexts after " + std::to_string(ms) + " ms");
    rpc::rpc_sync("worker1", "test.done");
  } else {
    g_done.get_future().wait();
  }
  rpc::shutdown(false);
  say(rank, "done");
  std::_Exit(0);
}

// The killed mode, worker 0 after worker 2 died: the call that was in flight, a new call
// to worker 2, and one to worker 1, which still serves.
void call_after_kill(int rank, rpc::ValueFuture& in_flight) {
  auto t0 = Clock::now();
  try {
    in_flight.wait();
    say(rank, "the call in flight returned");
  } catch (const rpc::RpcError& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    say(rank, "in flight: caught after " + std::to_string(ms) + " ms: " + e.message());
  }
  t0 = Clock::now();
  try {
    rpc::rpc_sync("worker2", add, {Tensor::ones({2}), Tensor::ones({2})}, std::chrono::seconds(2));
    say(rank, "the call to the dead worker returned");
  } catch (const rpc::RpcError& e) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    say(rank, "caught after " + std::to_string(ms) + " ms: " + e.message());
  }
  const rpc::Value v = rpc::rpc_sync("worker1", add, Tensor::ones({2}), Tensor::ones({2}));
  say(rank, "worker1 still serves: " + std::to_string(sum(v.tensor()).item<float>()));
  rpc::rpc_sync("worker1", "test.done");
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "killed" && mode != "dead-context") {
    std::fprintf(stderr, "usage: rpc_failure_probe killed|dead-context\n");
    return 2;
  }
  auto world = c10d::init_process_group();
  rpc::RpcBackendOptions options;
  options.rpc_timeout = std::chrono::seconds(20);
  register_test_functions();
  rpc::init_rpc("", options, world);
  const int rank = world->rank();
  if (mode == "dead-context") run_dead_context(*world, rank);
  // Everyone is up and connected before worker 2 dies.
  rpc::rpc_sync((rank + 1) % world->size(), add, Tensor::ones({2}), Tensor::ones({2}));
  // A call in flight when worker 2 dies: it sleeps 5 s, with a 10 s timeout.
  std::shared_ptr<rpc::ValueFuture> in_flight;
  if (rank == 0)
    in_flight = rpc::rpc_async("worker2", "sleep_ms", {rpc::Value(int64_t{5000})}, std::chrono::seconds(10));
  world->barrier()->wait();
  if (rank == 2) {
    say(rank, "killing myself");
    std::raise(SIGKILL);
  }
  if (rank == 0) {
    call_after_kill(rank, *in_flight);
  } else {
    g_done.get_future().wait();  // serves until worker 0 says it is done
  }
  // A graceful shutdown cannot agree with a dead worker, and MPI_Finalize would wait
  // for it: the survivors stop their agents and leave without finalising MPI.
  rpc::shutdown(false);
  say(rank, "done");
  std::_Exit(0);
}
