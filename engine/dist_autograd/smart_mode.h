// SMART mode's dependency exchange (docs/dist-autograd.md): before a pass runs, the send
// functions on a path to the roots are marked active on every worker, by messages along
// recv -> send pairs. Internal to dist_autograd.
#pragma once

#include <cstdint>
#include <vector>

#include "autograd/node.h"
#include "context.h"
#include "rpc/value.h"

namespace ddpscope::dist_autograd {

// From `starts`, finds the recv functions reachable through this worker's graph (not
// searched before in this pass) and activates their send functions on their workers;
// returns when every worker told has searched on in turn.
void activate_upstream(DistAutogradContext& ctx, int64_t pass, const std::vector<autograd::Node*>& starts);

// The handler of kActivateFunction: [ctx_id, pass, [autograd ids]].
rpc::Value receive_activation(const rpc::ValueList& args);

}  // namespace ddpscope::dist_autograd
