// RRefContext: one worker's side of the RRef protocol (PyTorch's RRef design note).
//
// Ids: every RRef and every fork has a globally unique id (worker << 48 | counter).
// The owner keeps the value (an OwnerRRef) and the set of live fork ids; each other
// copy is a UserRRef of one fork. Two guarantees keep the value alive exactly as long
// as it is used:
//  G1  the owner learns of every UserRRef deletion: a UserRRef's last handle sends
//      RRefUserDelete(rref, fork), retried until acknowledged;
//  G2  a parent is kept until the owner knows the child: a user that sends its RRef
//      keeps its own UserRRef alive (pending_children_) until RRefChildAccept arrives.
// The three ways an RRef is shared:
//  owner -> user  the owner adds the child's fork before sending (early registration);
//                 the child is confirmed at once.
//  user -> user   the child asks the owner to count it (RRefForkRequest), and once
//                 acknowledged tells the parent (RRefChildAccept); until then it is a
//                 pending user, whose deletion waits for the confirmation.
//  user -> owner  the owner resolves it to its OwnerRRef and accepts the child at once.
// No message order is assumed: a fork request or fetch may reach the owner before the
// remote call that creates the value (the owner then creates an empty OwnerRRef), and
// every control message is idempotent (a repeated fork request for a deleted fork is
// ignored: deleted forks are remembered), so the agent can retry them freely.
//
// Thread-safe: one mutex; messages are sent outside it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "rref.h"
#include "wire_format.h"

namespace ddpscope::rpc {

class RRefContext : public std::enable_shared_from_this<RRefContext> {
 public:
  // How the context sends its control messages: retried until acknowledged, then
  // `on_ack` runs. Provided by the agent.
  using SendControl =
      std::function<void(int32_t dst, wire::MessageType type, std::vector<int64_t> ids, std::function<void()> on_ack)>;
  RRefContext(int32_t self, SendControl send_control);

  int64_t new_id();
  // An OwnerRRef of a value this worker already has (PyTorch's RRef(value)).
  RRef create_owner(Value value);

  // remote(): the creator's UserRRef, pending until the owner answers the call.
  RRef create_user_for_remote(int32_t owner, int64_t* rref_id, int64_t* fork_id);
  // The owner answered the creator's remote call.
  void confirm_remote_user(int64_t fork_id);
  // At the owner: a remote call arrived for (rref, fork) from its creator.
  std::shared_ptr<RRefImpl> on_remote_call(int64_t rref_id, int64_t fork_id);

  // An RRef about to be sent to `dst`: the fork the receiver will hold (G2 bookkeeping).
  wire::RRefMeta fork_for(const RRef& rref, int32_t dst);
  // An RRef received from `src`: the local handle (sends the protocol's messages).
  RRef from_wire(const wire::RRefMeta& meta);

  // Control messages (each answered by an Ack by the agent).
  void on_fork_request(int64_t rref_id, int64_t fork_id);
  void on_user_delete(int64_t rref_id, int64_t fork_id);
  void on_child_accept(int64_t fork_id);
  // At the owner: the OwnerRRef of `rref_id`, created empty if its remote call has not
  // arrived yet (a fetch may come first).
  std::shared_ptr<RRefImpl> owner_rref(int64_t rref_id);

  // Called by ~RRefImpl of a UserRRef.
  void on_user_destroyed(const RRefImpl& user);

  // Owned values that still have forks ("RRef (0, 3) with forks [(1, 4)]").
  std::vector<std::string> leaks() const;
  // Forks this worker waits on the owner or a child for; zero when the protocol is idle.
  size_t pending() const;
  size_t owned() const;
  // After shutdown, destroyed UserRRefs send nothing.
  void close();

 private:
  void add_fork(int64_t rref_id, int64_t fork_id);

  const int32_t self_;
  SendControl send_control_;
  mutable std::mutex mutex_;
  bool closed_ = false;
  uint64_t next_local_ = 1;
  std::unordered_map<int64_t, std::shared_ptr<RRefImpl>> owners_;
  std::unordered_map<int64_t, std::set<int64_t>> forks_;                     // owner: live forks per RRef
  std::unordered_set<int64_t> deleted_forks_;                                // owner: for idempotency
  std::unordered_map<int64_t, std::shared_ptr<RRefImpl>> pending_users_;     // by fork id
  std::unordered_map<int64_t, std::shared_ptr<RRefImpl>> pending_children_;  // by child fork
};

}  // namespace ddpscope::rpc
