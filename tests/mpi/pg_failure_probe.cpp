// A small mpirun program that makes a collective fail on purpose, for tst_pg_failures:
//   timeout  - rank 1 sleeps past rank 0's 1 s timeout before joining an allreduce
//   mismatch - (with DDPSCOPE_DEBUG=detail) rank 0 allreduces f32[1024] while rank 1
//              broadcasts f32[10]
// Each rank prints what it caught as "rank R caught: <message>".
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "c10d/process_group.h"

using namespace ddpscope;
using namespace ddpscope::c10d;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  auto pg = init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(1)});
  try {
    if (mode == "timeout") {
      if (pg->rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));
      Tensor t = Tensor::ones({16, 4});
      pg->allreduce(t)->wait();
    } else if (mode == "mismatch") {
      if (pg->rank() == 0) {
        pg->allreduce(Tensor::ones({1024}))->wait();
      } else {
        pg->broadcast(Tensor::ones({10}))->wait();
      }
    } else {
      std::fprintf(stderr, "usage: pg_failure_probe timeout|mismatch\n");
      return 2;
    }
    std::printf("rank %d: no error\n", pg->rank());
  } catch (const Error& e) {
    std::printf("rank %d caught: %s\n", pg->rank(), e.message().c_str());
    std::fflush(stdout);
    return 1;
  }
  return 0;
}
