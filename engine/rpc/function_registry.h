// FunctionRegistry: the functions a worker runs for others, by name. Every worker of a
// job registers the same functions (the same program runs everywhere); a call names
// one, and an unknown name comes back to the caller as an error.
//
// The engine's differentiable ops are built-ins, so seed 000's example runs as written:
//
//   rpc::register_function("scale", [](const rpc::ValueList& a) {
//     return rpc::Value(mul_scalar(a.at(0).tensor(), a.at(1).to_double()));
//   });
//   Tensor t3 = rpc::rpc_sync("worker1", add, t1, t2).tensor();  // `add` is ddpscope::add
//
// Thread-safe: registration takes a lock; lookups after registration are shared.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "rref.h"
#include "value.h"

namespace ddpscope::rpc {

using RemoteFunction = std::function<Value(const ValueList& args)>;

struct FunctionOptions {
  // Quick: never blocks (no RPC, no lock held by others, no sleep) and takes time in
  // proportion to its arguments. The agent runs a quick call whose message is at most
  // `inline_bytes` on its receive thread, saving the hand-off to the pool (a thread
  // wake-up: 15-20 us here, several times that when the cores are busy). The engine's
  // built-in ops and echo are quick.
  bool quick = false;
  // The receive thread must not be held long: 64 KiB of an elementwise op is ~10 us.
  // echo, which hands its arguments back without reading them, runs there at any size;
  // matmul, whose time grows faster than its bytes, only when small.
  size_t inline_bytes = 64 * 1024;
};

// A function that answers later: the reply goes when its future completes (PyTorch's
// @rpc.functions.async_execution). It may return at once without holding a thread.
using AsyncRemoteFunction = std::function<std::shared_ptr<ValueFuture>(const ValueList& args)>;

struct RegisteredFunction {
  RemoteFunction fn;
  FunctionOptions options;
  AsyncRemoteFunction async_fn;  // set instead of fn for an async function
  Value operator()(const ValueList& args) const { return fn(args); }
};

// Registers (or replaces) `name` on this worker.
void register_function(const std::string& name, RemoteFunction fn, FunctionOptions options = {});
void register_async_function(const std::string& name, AsyncRemoteFunction fn, FunctionOptions options = {});
// The function registered as `name`, or null.
std::shared_ptr<const RegisteredFunction> find_function(const std::string& name);

// Names a function to call: by its registered name, or by an engine op itself.
class FunctionRef {
 public:
  FunctionRef(std::string name) : name_(std::move(name)) {}
  FunctionRef(const char* name) : name_(name) {}
  // A built-in op by its C++ function: add, sub, mul, div, matmul (ddpscope::).
  FunctionRef(Tensor (*binary_op)(const Tensor&, const Tensor&));
  FunctionRef(Tensor (*unary_op)(const Tensor&));
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

}  // namespace ddpscope::rpc
