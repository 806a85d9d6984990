#include "rpc.h"

#include <mutex>

namespace ddpscope::rpc {
namespace {

std::mutex g_mutex;
std::shared_ptr<RpcAgent> g_agent;

std::shared_ptr<RpcAgent> current() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_agent) throw RpcError("RPC is not initialised on this worker; call rpc::init_rpc first");
  return g_agent;
}

}  // namespace

int32_t WorkerRef::resolve(const RpcAgent& a) const {
  if (!name_.empty()) return a.worker(name_).id;
  return a.worker(id_).id;
}

void init_rpc(const std::string& name, RpcBackendOptions options, std::shared_ptr<c10d::ProcessGroup> group) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_agent)
      throw RpcError("init_rpc: RPC is already initialised as " + g_agent->self().name + "; call rpc::shutdown first");
  }
  if (!group) group = c10d::init_process_group();
  auto a = RpcAgent::create(name, std::move(options), std::move(group));
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_agent = a;
  }
  // Only now: a call that arrives sooner (another worker finished init first) may run a
  // function that uses rpc::agent(). ZeroMQ holds such messages until then.
  a->start_receiving();
}

void shutdown(bool graceful) {
  std::shared_ptr<RpcAgent> a;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    a = g_agent;
  }
  if (!a) return;
  // Forget the agent whatever shutdown throws (a leak report): it is stopped either way.
  struct Forget {
    ~Forget() {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_agent.reset();
    }
  } forget;
  a->shutdown(graceful);
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_agent != nullptr;
}

RpcAgent& agent() { return *current(); }

RRef make_rref(Value value) { return current()->rrefs().create_owner(std::move(value)); }

WorkerInfo get_worker_info(const WorkerRef& worker) {
  auto a = current();
  WorkerRef self_ref(a->self().id);
  const WorkerRef& ref = worker.resolve_is_default() ? self_ref : worker;
  return a->worker(ref.resolve(*a));
}

std::shared_ptr<ValueFuture> rpc_async(const WorkerRef& to, const FunctionRef& fn, ValueList args,
                                       Milliseconds timeout) {
  auto a = current();
  return a->call(to.resolve(*a), fn.name(), std::move(args), timeout);
}

namespace {
// This thread's recent round trips, averaged over about 8 calls.
thread_local double recent_round_trip_us = 0;
constexpr auto kSpin = std::chrono::microseconds(50);
// Watched for when recent calls took less: past it, a sleep and wake-up (15-20 us) is a
// small part of the wait, and the watching thread takes a core from the copying ones.
constexpr double kWatchBelowUs = 20;
}  // namespace

Value rpc_sync(const WorkerRef& to, const FunctionRef& fn, ValueList args, Milliseconds timeout) {
  // A reply through shared memory comes within microseconds, and a sleep and wake-up cost
  // more than that: the caller watches for it first (8 B round trip 13-34 -> 8 us in 6 runs
  // each). Not when its recent calls took longer (large messages, slow functions): on 2
  // cores the watching would slow the threads that copy the reply (1 MiB echo 21 -> 9 GB/s).
  const auto t0 = std::chrono::steady_clock::now();
  auto future = rpc_async(to, fn, std::move(args), timeout);
  Value result = future->wait_spinning(recent_round_trip_us < kWatchBelowUs ? kSpin : std::chrono::microseconds(0));
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  recent_round_trip_us += (us - recent_round_trip_us) / 8;
  return result;
}

RRef remote(const WorkerRef& to, const FunctionRef& fn, ValueList args, Milliseconds timeout) {
  auto a = current();
  return a->remote(to.resolve(*a), fn.name(), std::move(args), timeout);
}

// ---- RRef ----

int32_t RRef::owner() const { return impl_->owner; }
bool RRef::is_owner() const { return impl_->is_owner; }
int64_t RRef::id() const { return impl_->rref_id; }
int64_t RRef::fork_id() const { return impl_->fork_id; }

std::string RRef::owner_name() const {
  return is_initialized() ? agent().worker(impl_->owner).name : "worker id " + std::to_string(impl_->owner);
}

std::string RRef::describe() const {
  if (!impl_) return "empty RRef";
  std::string s = "RRef " + wire::format_id(impl_->rref_id) + " owned by " + owner_name();
  if (!impl_->is_owner) s += ", fork " + wire::format_id(impl_->fork_id);
  return s;
}

Value RRef::local_value() const {
  DDPSCOPE_CHECK(impl_, "local_value() of an empty RRef");
  if (!impl_->is_owner) {
    throw RpcError("local_value() of " + describe() +
                   " on a worker that does not own it; use to_here() to fetch a copy");
  }
  return impl_->value->wait();
}

Value RRef::to_here(std::chrono::milliseconds timeout) const {
  DDPSCOPE_CHECK(impl_, "to_here() of an empty RRef");
  auto a = current();
  if (timeout.count() <= 0) timeout = a->options().rpc_timeout;
  if (impl_->is_owner) {
    if (!impl_->value->wait_for(timeout)) {
      throw RpcError(
          detail::concat("to_here of ", describe(), ": the value was not produced within ", timeout.count(), " ms"));
    }
    return impl_->value->wait();
  }
  return a->fetch(*impl_, timeout)->wait();
}

// ---- Value ----

Value::Value(RRef v) : v_(std::make_shared<RRef>(std::move(v))) {}

std::string Value::type_name() const {
  if (is_none()) return "none";
  if (is_bool()) return "bool";
  if (is_int()) return "int";
  if (is_double()) return "double";
  if (is_string()) return "string";
  if (is_tensor()) return "tensor " + tensor().describe();
  if (is_list()) return "list of " + std::to_string(list().size());
  return "RRef";
}

bool Value::to_bool() const {
  DDPSCOPE_CHECK(is_bool(), "expected a bool, got ", type_name());
  return std::get<bool>(v_);
}
int64_t Value::to_int() const {
  DDPSCOPE_CHECK(is_int(), "expected an int, got ", type_name());
  return std::get<int64_t>(v_);
}
double Value::to_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  DDPSCOPE_CHECK(is_double(), "expected a number, got ", type_name());
  return std::get<double>(v_);
}
const std::string& Value::str() const {
  DDPSCOPE_CHECK(is_string(), "expected a string, got ", type_name());
  return std::get<std::string>(v_);
}
const Tensor& Value::tensor() const {
  DDPSCOPE_CHECK(is_tensor(), "expected a tensor, got ", type_name());
  return std::get<Tensor>(v_);
}
const ValueList& Value::list() const {
  DDPSCOPE_CHECK(is_list(), "expected a list, got ", type_name());
  return *std::get<std::shared_ptr<ValueList>>(v_);
}
const RRef& Value::rref() const {
  DDPSCOPE_CHECK(is_rref(), "expected an RRef, got ", type_name());
  return *std::get<std::shared_ptr<RRef>>(v_);
}

}  // namespace ddpscope::rpc
