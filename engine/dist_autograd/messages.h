// Distributed autograd's messages between workers, as types with their own encoding
// (PyTorch keeps its own in rpc_messages): what each carries is named here once, and a
// message of the wrong shape is refused with an error that names it, never read by a
// guessed position.
//
// They travel as the arguments of RPC calls to the functions named in dist_engine.h.
#pragma once

#include <cstdint>
#include <vector>

#include "rpc/value.h"

namespace ddpscope::dist_autograd {

// A recv function's gradients, to the send function at the other end (kGradientsFunction).
struct GradientsMessage {
  int64_t ctx_id = -1;
  int64_t send_id = -1;  // the autograd id of the send function they are for
  int64_t pass = -1;
  bool retain_graph = false;
  std::vector<Tensor> grads;  // an undefined tensor: none (the receiver uses zeros)

  rpc::ValueList encode() &&;
  static GradientsMessage decode(const rpc::ValueList& parts);
};

// SMART mode: activate these send functions of `pass` (kActivateFunction).
struct ActivateMessage {
  int64_t ctx_id = -1;
  int64_t pass = -1;
  std::vector<int64_t> send_ids;

  rpc::ValueList encode() const;
  static ActivateMessage decode(const rpc::ValueList& parts);
};

// A pass ended in an error: drop it, and pass the word on (kAbandonFunction).
struct AbandonMessage {
  int64_t ctx_id = -1;
  int64_t pass = -1;
  int32_t sender = -1;

  rpc::ValueList encode() const;
  static AbandonMessage decode(const rpc::ValueList& parts);
};

// A context was released: forget it, and pass the word on (kReleaseFunction).
struct ReleaseMessage {
  int64_t ctx_id = -1;
  int32_t sender = -1;

  rpc::ValueList encode() const;
  static ReleaseMessage decode(const rpc::ValueList& parts);
};

}  // namespace ddpscope::dist_autograd
