// Faults on purpose, for the fault suite (tests/faults): DDPSCOPE_FAULT names a rank, an
// iteration, the phase of the step to fail in, and how:
//   DDPSCOPE_FAULT="rank=1,iter=5"                      throw at the start of iteration 5
//   DDPSCOPE_FAULT="rank=1,iter=5,phase=backward,kill"  SIGKILL itself as backward starts
//   DDPSCOPE_FAULT="rank=1,iter=5,phase=allreduce,segv" SIGSEGV before the loss allreduce
//   DDPSCOPE_FAULT="rank=1,iter=9,phase=end,stop"       SIGSTOP itself after training (9
//                                                       iterations), before reporting its end
//   DDPSCOPE_FAULT="rank=1,iter=5,phase=allreduce,skip" skip the loss allreduce, so the rank
//                                                       calls a different collective next
//   ...,phase=allreduce,wrong_op     a broadcast where the others allreduce the loss
//   ...,phase=allreduce,wrong_size   the loss allreduce with 2 elements instead of 1
//   ...,phase=allreduce,wrong_dtype  the loss allreduce in f32 instead of f64
// Phases: iteration (before the step), forward, backward, allreduce, optimizer, end; with
// --remote-embedding the server (rank 0) also has serve and backward, counted in calls
// of its embedding lookup rather than iterations (remote_embedding_trainer.cpp). Before a
// signal the rank ships its probe events (the reporter), so the run file shows where.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ddpscope::apps {

struct FaultSpec {
  int rank = -1;
  int64_t iteration = -1;
  std::string phase = "iteration";
  enum class Action { Throw, Kill, Segv, Stop, Skip, WrongOp, WrongSize, WrongDtype } action = Action::Throw;
};

// Parsed once from DDPSCOPE_FAULT (rank -1: none).
const FaultSpec& fault_spec();
// Called before a signal is raised: ships the rank's events and says what it does.
void set_fault_reporter(std::function<void(const std::string& what)> reporter);
// Acts out the fault when it names this rank, iteration and phase. Returns true when the
// caller must not run the operation that follows as usual (skip, wrong_*: the caller
// reads fault_spec().action for what to do instead); false otherwise.
bool fault_point(const char* phase, int rank, int64_t iteration);

}  // namespace ddpscope::apps
