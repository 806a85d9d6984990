// Distributed autograd examples: small jobs that a user, a test or the desktop
// app runs to see seed 000's algorithm at work, each one a real mpirun job.
//   seed        seed 000's example as written: worker 0 holds t1, t2 and t4, worker 1 adds
//   chain       a nested chain through every worker; worker k scales by its own w
//   rref        backward through an RRef owned by the last worker, fetched by worker 1
//   unused-rpc  an RPC whose result does not feed the loss: FAST mode errors, SMART completes
//   parameter-server  worker 0 holds W; every other worker fits its own data to it at the
//               same time, stepping W through a DistributedOptimizer (its line adds
//               "losses", one per step)
//   ring        no RPC: one ring allreduce (engine/c10d/ring_allreduce.h) of a small
//               tensor, every step recorded, for the Learn tab's ring lesson
// Run by `ddpscope-cli example NAME --np N`, which starts `ddpscope-worker example ...`.
// With --json every worker prints one line:
//   {"worker": N, "inputs": {NAME: nested lists}, "gradients": {NAME: nested lists}}
// naming tensors as the example's code does, so anyone can check them on one machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ddpscope::apps {

struct ExampleOptions {
  std::string name;
  uint64_t seed = 0;
  std::string mode = "fast";  // fast | smart
  bool json = false;
  int64_t repeat = 0;  // > 0: worker 0 also times this many forward + backward runs
};

const std::vector<std::string>& example_names();
// The worker's arguments after "example".
std::vector<std::string> example_arguments(const ExampleOptions& o);
// One rank's part of the job (under mpirun); returns the exit code.
int example_worker(int argc, char** argv);

}  // namespace ddpscope::apps
