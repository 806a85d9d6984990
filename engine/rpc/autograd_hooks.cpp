#include "autograd_hooks.h"

#include <atomic>

namespace ddpscope::rpc {
namespace {
// Read on every message in a context: an atomic shared_ptr, no lock.
std::atomic<std::shared_ptr<AutogradHooks>>& installed() {
  static std::atomic<std::shared_ptr<AutogradHooks>> hooks;
  return hooks;
}
}  // namespace

void set_autograd_hooks(std::shared_ptr<AutogradHooks> hooks) { installed().store(std::move(hooks)); }

std::shared_ptr<AutogradHooks> autograd_hooks() { return installed().load(); }

}  // namespace ddpscope::rpc
