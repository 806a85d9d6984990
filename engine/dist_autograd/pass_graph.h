// The graph one worker runs in one distributed backward pass, recorded for the run file:
// every node reachable from the pass's starts (the roots' GraphRoot on the worker that
// called backward, and the send functions the pass counts), its dependency count before
// the pass, and for send and recv nodes the autograd message id and worker of their
// other end, which is how the app joins the graphs of all workers into one.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "autograd/node.h"

namespace ddpscope::dist_autograd {

// Nothing while probes are off or past limit_recorded_graphs(); returns whether it
// recorded. `iteration` in the run file is the pass id.
bool record_pass_graph(int64_t ctx_id, int64_t pass, const std::vector<autograd::Node*>& starts,
                       const std::unordered_map<autograd::Node*, int>& dependencies);

}  // namespace ddpscope::dist_autograd
