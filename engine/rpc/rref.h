// RRef: a reference to a value that lives on one worker (its owner), as PyTorch's
// remote references. remote() returns one at once while the owner computes the value;
// to_here() fetches a copy, waiting for a value not produced yet; an RRef passed in an
// RPC to another worker becomes a new fork there.
//
//   RRef r = rpc::remote("worker1", "add", {t1, t2});
//   Tensor t = r.to_here().tensor();
//
// The owner holds an OwnerRRef (the value) and the set of live forks; every other copy
// is a UserRRef with a fork id. The protocol that keeps the value alive exactly as long
// as a fork exists is in rref_context.h. A handle is cheap to copy; thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "c10d/future.h"
#include "value.h"

namespace ddpscope::rpc {

using ValueFuture = c10d::BasicFuture<Value>;
class RRefContext;

// The state one worker keeps for one RRef (shared by every handle on that worker).
struct RRefImpl {
  RRefImpl(int64_t rref_id, int32_t owner, bool is_owner, int64_t fork_id, std::weak_ptr<RRefContext> context);
  // A UserRRef's last handle tells the owner (through the context) that its fork died.
  ~RRefImpl();

  const int64_t rref_id;
  const int32_t owner;
  const bool is_owner;
  const int64_t fork_id;  // -1 on the owner
  const std::weak_ptr<RRefContext> context;
  // Owner: the value, completed when the owner's function returns (or fails).
  std::shared_ptr<ValueFuture> value = std::make_shared<ValueFuture>();
};

class RRef {
 public:
  RRef() = default;
  explicit RRef(std::shared_ptr<RRefImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  int32_t owner() const;
  // The owner's worker name.
  std::string owner_name() const;
  bool is_owner() const;
  // Globally unique: (creating worker << 48) | counter, printed as "(w, n)".
  int64_t id() const;
  int64_t fork_id() const;
  // The value itself, on its owner only; waits until it is produced.
  Value local_value() const;
  // A copy of the value, fetched from the owner (the value itself on the owner). Waits
  // for a value not produced yet, at most `timeout` (zero: the agent's rpc_timeout).
  Value to_here(std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) const;
  std::string describe() const;  // "RRef (0, 3) owned by worker1, fork (2, 5)"

  const std::shared_ptr<RRefImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<RRefImpl> impl_;
};

}  // namespace ddpscope::rpc
