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
      signal(SIGSEGV, SIG_DFL);
      raise(SIGSEGV);
      break;
    case FaultSpec::Action::Stop:
      // No reporter: a stopped rank ships nothing more, as a real one would.
      log::warn("rank {} raises SIGSTOP{} (DDPSCOPE_FAULT)", rank, where);
      raise(SIGSTOP);
      break;
    case FaultSpec::Action::Skip:
      if (f.phase != "allreduce")
        throw DDPSCOPE_ERROR("DDPSCOPE_FAULT: skip applies to phase=allreduce (the loss allreduce), not ", f.phase);
      log::warn("rank {} skips the loss allreduce of iteration {} (DDPSCOPE_FAULT)", rank, iteration);
      return true;
  }
  return false;
}

}  // namespace ddpscope::apps
