// The send and recv functions of distributed autograd (seed 000): the two ends of an RPC
// in the backward graph.
//
// SendFunction sits on the sender of a message whose tensors require grad. Its next
// edges lead to those tensors' gradient functions; in backward its input is the
// gradient that the receiver's RecvFunction sends back, which it passes on unchanged.
//
// RecvFunction sits on the receiver: the received tensors that require grad are its
// outputs. In backward it sends their gradients to its SendFunction's worker and waits
// for the reply inside the running pass (BackwardScope), so a pass ends only when the
// work it started on other workers has ended.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "autograd/node.h"

namespace ddpscope::dist_autograd {

class SendFunction : public autograd::Node {
 public:
  SendFunction(int64_t ctx_id, int64_t autograd_id, int32_t peer)
      : ctx_id_(ctx_id), autograd_id_(autograd_id), peer_(peer) {}
  std::string name() const override { return "SendRpcBackward"; }
  autograd::NodeKind kind() const override { return autograd::NodeKind::Send; }
  autograd::variable_list apply(autograd::variable_list&& grads) override { return std::move(grads); }
  int64_t autograd_id() const { return autograd_id_; }
  int32_t peer() const { return peer_; }  // the worker holding the matching recv function
  int64_t ctx_id() const { return ctx_id_; }

 private:
  const int64_t ctx_id_, autograd_id_;
  const int32_t peer_;
};

class RecvFunction : public autograd::Node {
 public:
  RecvFunction(int64_t ctx_id, int64_t autograd_id, int32_t peer)
      : ctx_id_(ctx_id), autograd_id_(autograd_id), peer_(peer) {}
  std::string name() const override { return "RecvRpcBackward"; }
  autograd::NodeKind kind() const override { return autograd::NodeKind::Recv; }
  autograd::variable_list apply(autograd::variable_list&& grads) override;
  int64_t autograd_id() const { return autograd_id_; }
  int32_t peer() const { return peer_; }  // the worker holding the matching send function
  int64_t ctx_id() const { return ctx_id_; }

 private:
  const int64_t ctx_id_, autograd_id_;
  const int32_t peer_;
};

}  // namespace ddpscope::dist_autograd
