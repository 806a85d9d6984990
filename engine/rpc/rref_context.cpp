#include "rref_context.h"

#include "probe.h"

namespace ddpscope::rpc {
namespace {

using wire::MessageType;

void record_rref(const char* what, int64_t rref_id, int64_t fork_id, int32_t peer) {
  if (!probes::enabled()) return;
  probes::EventArgs args;
  args.id = rref_id;
  args.id2 = fork_id;
  args.peer = static_cast<int16_t>(peer);
  probes::instant(probes::Kind::RRef, probes::intern(what, __FILE__, __LINE__), args);
}

}  // namespace

RRefContext::RRefContext(int32_t self, SendControl send_control)
    : self_(self), send_control_(std::move(send_control)) {}

int64_t RRefContext::new_id() {
  std::lock_guard<std::mutex> lock(mutex_);
  return wire::make_global_id(self_, next_local_++);
}

RRef RRefContext::create_owner(Value value) {
  const int64_t id = new_id();
  auto impl = std::make_shared<RRefImpl>(id, self_, true, -1, weak_from_this());
  impl->value->mark_completed(std::move(value));
  record_rref("rref.create", id, -1, self_);
  // Not in owners_ until it is forked: until then only local handles hold it.
  return RRef(impl);
}

RRef RRefContext::create_user_for_remote(int32_t owner, int64_t* rref_id, int64_t* fork_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  *rref_id = wire::make_global_id(self_, next_local_++);
  *fork_id = wire::make_global_id(self_, next_local_++);
  auto impl = std::make_shared<RRefImpl>(*rref_id, owner, false, *fork_id, weak_from_this());
  // Held until the owner answers: a deletion before then could overtake the call.
  pending_users_[*fork_id] = impl;
  record_rref("rref.create", *rref_id, *fork_id, owner);
  return RRef(impl);
}

void RRefContext::confirm_remote_user(int64_t fork_id) {
  std::shared_ptr<RRefImpl> released;  // destroyed outside the lock: it may send a delete
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_users_.find(fork_id);
  if (it == pending_users_.end()) return;
  released = std::move(it->second);
  pending_users_.erase(it);
  record_rref("rref.confirm", released->rref_id, fork_id, released->owner);
  // `released` dies after the lock guard (declared before it): see the comment above.
}

std::shared_ptr<RRefImpl> RRefContext::owner_rref(int64_t rref_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = owners_[rref_id];
  if (!slot) slot = std::make_shared<RRefImpl>(rref_id, self_, true, -1, weak_from_this());
  return slot;
}

void RRefContext::add_fork(int64_t rref_id, int64_t fork_id) {
  // A fork deleted already (a retried fork request arriving late) is not revived.
  if (deleted_forks_.count(fork_id)) return;
  forks_[rref_id].insert(fork_id);
}

std::shared_ptr<RRefImpl> RRefContext::on_remote_call(int64_t rref_id, int64_t fork_id) {
  auto owner = owner_rref(rref_id);
  std::lock_guard<std::mutex> lock(mutex_);
  add_fork(rref_id, fork_id);
  record_rref("rref.owner_create", rref_id, fork_id, wire::id_worker(fork_id));
  return owner;
}

wire::RRefMeta RRefContext::fork_for(const RRef& rref, int32_t dst) {
  DDPSCOPE_CHECK(rref.defined(), "cannot send an empty RRef");
  const auto& impl = rref.impl();
  wire::RRefMeta meta{impl->owner, impl->rref_id, -1, self_};
  // The owner sending to itself forks too: until the message arrives, the fork keeps
  // the value findable by id (owners_), and from_wire drops it on arrival.
  std::lock_guard<std::mutex> lock(mutex_);
  meta.fork_id = wire::make_global_id(self_, next_local_++);
  if (impl->is_owner) {
    // Early registration: the owner counts the child before the message leaves.
    owners_.emplace(impl->rref_id, impl);
    add_fork(impl->rref_id, meta.fork_id);
  } else {
    pending_children_[meta.fork_id] = impl;  // G2: the parent lives until the child is known
  }
  record_rref("rref.fork", impl->rref_id, meta.fork_id, dst);
  return meta;
}

RRef RRefContext::from_wire(const wire::RRefMeta& meta) {
  if (meta.owner == self_) {
    // user -> owner (or owner -> itself): the OwnerRRef itself. A user parent is told
    // at once that its child is known, so it may let go of its own fork.
    auto owner = owner_rref(meta.rref_id);
    if (meta.parent == self_ && meta.fork_id >= 0) {
      on_user_delete(meta.rref_id, meta.fork_id);  // owner -> itself: the fork has arrived
    } else if (meta.fork_id >= 0) {
      send_control_(meta.parent, MessageType::RRefChildAccept, {meta.fork_id}, nullptr);
    }
    return RRef(owner);
  }
  auto impl = std::make_shared<RRefImpl>(meta.rref_id, meta.owner, false, meta.fork_id, weak_from_this());
  if (meta.parent == meta.owner) {
    record_rref("rref.confirm", meta.rref_id, meta.fork_id, meta.owner);
    return RRef(impl);  // owner -> user: registered early, confirmed already
  }
  // user -> user: pending until the owner counts this fork; then the parent is told.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_users_[meta.fork_id] = impl;
  }
  const int64_t fork = meta.fork_id;
  const int32_t parent = meta.parent;
  std::weak_ptr<RRefContext> weak = weak_from_this();
  send_control_(meta.owner, MessageType::RRefForkRequest, {meta.rref_id, fork}, [weak, fork, parent] {
    auto self = weak.lock();
    if (!self) return;
    self->confirm_remote_user(fork);
    self->send_control_(parent, MessageType::RRefChildAccept, {fork}, nullptr);
  });
  return RRef(impl);
}

void RRefContext::on_fork_request(int64_t rref_id, int64_t fork_id) {
  owner_rref(rref_id);  // the remote call that creates it may not have arrived yet
  std::lock_guard<std::mutex> lock(mutex_);
  add_fork(rref_id, fork_id);
  record_rref("rref.fork_accept", rref_id, fork_id, wire::id_worker(fork_id));
}

void RRefContext::on_user_delete(int64_t rref_id, int64_t fork_id) {
  std::shared_ptr<RRefImpl> freed;  // released after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  deleted_forks_.insert(fork_id);
  auto it = forks_.find(rref_id);
  if (it == forks_.end() || it->second.erase(fork_id) == 0) return;  // a repeated delete
  record_rref("rref.delete", rref_id, fork_id, wire::id_worker(fork_id));
  if (it->second.empty()) {
    forks_.erase(it);
    // No fork is left: the value goes as soon as no handle on this worker holds it.
    auto o = owners_.find(rref_id);
    if (o != owners_.end()) {
      freed = std::move(o->second);
      owners_.erase(o);
    }
  }
}

void RRefContext::on_child_accept(int64_t fork_id) {
  std::shared_ptr<RRefImpl> parent;  // may be the last handle: dies after the lock
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pending_children_.find(fork_id);
  if (it == pending_children_.end()) return;
  parent = std::move(it->second);
  pending_children_.erase(it);
  record_rref("rref.child_accept", parent->rref_id, fork_id, wire::id_worker(fork_id));
}

void RRefContext::on_user_destroyed(const RRefImpl& user) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
  }
  record_rref("rref.user_delete", user.rref_id, user.fork_id, user.owner);
  send_control_(user.owner, MessageType::RRefUserDelete, {user.rref_id, user.fork_id}, nullptr);
}

std::vector<std::string> RRefContext::leaks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [rref, forks] : forks_) {
    if (forks.empty()) continue;
    std::string line = "RRef " + wire::format_id(rref) + " with forks [";
    bool first = true;
    for (int64_t f : forks) {
      line += (first ? "" : ", ") + wire::format_id(f);
      first = false;
    }
    out.push_back(line + "]");
  }
  return out;
}

size_t RRefContext::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_users_.size() + pending_children_.size();
}

size_t RRefContext::owned() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return owners_.size();
}

void RRefContext::close() {
  std::unordered_map<int64_t, std::shared_ptr<RRefImpl>> users, children, owners;
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  users.swap(pending_users_);
  children.swap(pending_children_);
  owners.swap(owners_);
}

// ---- RRefImpl ----

RRefImpl::RRefImpl(int64_t id, int32_t own, bool owner_side, int64_t fork, std::weak_ptr<RRefContext> ctx)
    : rref_id(id), owner(own), is_owner(owner_side), fork_id(fork), context(std::move(ctx)) {}

RRefImpl::~RRefImpl() {
  if (is_owner) return;
  if (auto ctx = context.lock()) ctx->on_user_destroyed(*this);
}

}  // namespace ddpscope::rpc
