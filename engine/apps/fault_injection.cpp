#include "fault_injection.h"
#include "ddpscope/log.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::apps {
namespace {

std::function<void(const std::string&)>& reporter() {
  static std::function<void(const std::string&)> r;
  return r;
}

}  // namespace

const FaultSpec& fault_spec() {
  static const FaultSpec spec = [] {
    FaultSpec f;
    const char* text = std::getenv("DDPSCOPE_FAULT");
    if (!text) return f;
    long iteration = -1;
    std::sscanf(text, "rank=%d,iter=%ld", &f.rank, &iteration);
    f.iteration = iteration;
    if (const char* p = std::strstr(text, "phase=")) {
      f.phase = std::string(p + 6, std::strcspn(p + 6, ","));
    }
    if (std::strstr(text, ",kill")) f.action = FaultSpec::Action::Kill;
    if (std::strstr(text, ",segv")) f.action = FaultSpec::Action::Segv;
    if (std::strstr(text, ",skip")) f.action = FaultSpec::Action::Skip;
    if (std::strstr(text, ",stop")) f.action = FaultSpec::Action::Stop;
    if (std::strstr(text, ",wrong_op")) f.action = FaultSpec::Action::WrongOp;
    if (std::strstr(text, ",wrong_size")) f.action = FaultSpec::Action::WrongSize;
    if (std::strstr(text, ",wrong_dtype")) f.action = FaultSpec::Action::WrongDtype;
    return f;
  }();
  return spec;
}

void set_fault_reporter(std::function<void(const std::string&)> r) { reporter() = std::move(r); }

bool fault_point(const char* phase, int rank, int64_t iteration) {
  const FaultSpec& f = fault_spec();
  if (f.rank != rank || f.iteration != iteration || f.phase != phase) return false;
  const std::string where = f.phase == "iteration" ? " at iteration " + std::to_string(iteration)
                            : f.phase == "end"
                                ? " after training"
                                : std::string(" in ") + phase + " of iteration " + std::to_string(iteration);
  switch (f.action) {
    case FaultSpec::Action::Throw: throw DDPSCOPE_ERROR("injected fault (DDPSCOPE_FAULT)", where);
    case FaultSpec::Action::Kill:
      if (reporter()) reporter()("SIGKILL" + where);
      raise(SIGKILL);
      break;
    case FaultSpec::Action::Segv:
      if (reporter()) reporter()("SIGSEGV" + where);
      raise(SIGSEGV);  // through the flight recorder's handler (it dumps), then the default
      break;
    case FaultSpec::Action::Stop:
      // No reporter: a stopped rank ships nothing more, as a real one would.
      log::warn("rank {} raises SIGSTOP{} (DDPSCOPE_FAULT)", rank, where);
      raise(SIGSTOP);
      break;
    case FaultSpec::Action::Skip:
    case FaultSpec::Action::WrongOp:
    case FaultSpec::Action::WrongSize:
    case FaultSpec::Action::WrongDtype: {
      const char* what = f.action == FaultSpec::Action::Skip        ? "skips"
                         : f.action == FaultSpec::Action::WrongOp   ? "broadcasts instead of allreducing"
                         : f.action == FaultSpec::Action::WrongSize ? "allreduces 2 elements instead of 1 in"
                                                                    : "allreduces f32 instead of f64 in";
      if (f.phase != "allreduce")
        throw DDPSCOPE_ERROR("DDPSCOPE_FAULT: skip and wrong_* apply to phase=allreduce (the loss allreduce), not ",
                             f.phase);
      log::warn("rank {} {} the loss allreduce of iteration {} (DDPSCOPE_FAULT)", rank, what, iteration);
      return true;
    }
  }
  return false;
}

}  // namespace ddpscope::apps
