#include "function_registry.h"

#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "autograd/ops.h"

namespace ddpscope::rpc {
namespace {

const Tensor& tensor_arg(const ValueList& args, size_t i, const char* op) {
  DDPSCOPE_CHECK(args.size() > i, op, " needs ", i + 1, " tensor arguments, got ", args.size());
  DDPSCOPE_CHECK(args[i].is_tensor(), op, ": argument ", i, " must be a tensor, got ", args[i].type_name());
  return args[i].tensor();
}

template <Tensor (*Op)(const Tensor&, const Tensor&)>
Value binary(const char* name, const ValueList& a) {
  DDPSCOPE_CHECK(a.size() == 2, name, " takes 2 tensors, got ", a.size(), " arguments");
  return Op(tensor_arg(a, 0, name), tensor_arg(a, 1, name));
}
template <Tensor (*Op)(const Tensor&)>
Value unary(const char* name, const ValueList& a) {
  DDPSCOPE_CHECK(a.size() == 1, name, " takes 1 tensor, got ", a.size(), " arguments");
  return Op(tensor_arg(a, 0, name));
}

Tensor sum_all(const Tensor& t) { return sum(t); }

struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const RegisteredFunction>> functions;
  // Built-in ops by address, so FunctionRef(add) finds its name.
  std::unordered_map<const void*, std::string> op_names;

  void add_quick(const char* name, RemoteFunction f, size_t inline_bytes = FunctionOptions{}.inline_bytes) {
    functions[name] = std::make_shared<const RegisteredFunction>(
        RegisteredFunction{std::move(f), {.quick = true, .inline_bytes = inline_bytes}, nullptr});
  }

  Registry() {
    auto bin = [&](const char* name, Tensor (*op)(const Tensor&, const Tensor&), RemoteFunction f,
                   size_t inline_bytes = FunctionOptions{}.inline_bytes) {
      add_quick(name, std::move(f), inline_bytes);
      op_names[reinterpret_cast<const void*>(op)] = name;
    };
    auto un = [&](const char* name, Tensor (*op)(const Tensor&), RemoteFunction f) {
      add_quick(name, std::move(f));
      op_names[reinterpret_cast<const void*>(op)] = name;
    };
    bin("add", &add, [](const ValueList& a) { return binary<&add>("add", a); });
    bin("sub", &sub, [](const ValueList& a) { return binary<&sub>("sub", a); });
    bin("mul", &mul, [](const ValueList& a) { return binary<&mul>("mul", a); });
    bin("div", &div, [](const ValueList& a) { return binary<&div>("div", a); });
    bin(
        "matmul", &matmul, [](const ValueList& a) { return binary<&matmul>("matmul", a); }, 4096);
    un("neg", &neg, [](const ValueList& a) { return unary<&neg>("neg", a); });
    un("relu", &relu, [](const ValueList& a) { return unary<&relu>("relu", a); });
    un("tanh", &tanh, [](const ValueList& a) { return unary<&tanh>("tanh", a); });
    un("sigmoid", &sigmoid, [](const ValueList& a) { return unary<&sigmoid>("sigmoid", a); });
    un("exp", &exp, [](const ValueList& a) { return unary<&exp>("exp", a); });
    un("sum", static_cast<Tensor (*)(const Tensor&)>(&sum),
       [](const ValueList& a) { return unary<&sum_all>("sum", a); });
    // Plumbing every job has: echo returns its arguments (one argument: that value), for
    // ping-pong and throughput checks; sleep_ms waits, for timeout checks.
    add_quick(
        "echo", [](const ValueList& a) { return a.size() == 1 ? a[0] : Value(a); }, SIZE_MAX);
    functions["sleep_ms"] = std::make_shared<const RegisteredFunction>(
        RegisteredFunction{[](const ValueList& a) {
                             DDPSCOPE_CHECK(a.size() == 1 && a[0].is_int(), "sleep_ms takes one int (milliseconds)");
                             std::this_thread::sleep_for(std::chrono::milliseconds(a[0].to_int()));
                             return Value();
                           },
                           {},
                           nullptr});
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: calls may run during static destruction
  return *r;
}

}  // namespace

void register_function(const std::string& name, RemoteFunction fn, FunctionOptions options) {
  DDPSCOPE_CHECK(!name.empty(), "register_function: the name is empty");
  DDPSCOPE_CHECK(fn != nullptr, "register_function('", name, "'): the function is empty");
  std::unique_lock lock(registry().mutex);
  registry().functions[name] =
      std::make_shared<const RegisteredFunction>(RegisteredFunction{std::move(fn), options, nullptr});
}

void register_async_function(const std::string& name, AsyncRemoteFunction fn, FunctionOptions options) {
  DDPSCOPE_CHECK(!name.empty(), "register_async_function: the name is empty");
  DDPSCOPE_CHECK(fn != nullptr, "register_async_function('", name, "'): the function is empty");
  std::unique_lock lock(registry().mutex);
  registry().functions[name] =
      std::make_shared<const RegisteredFunction>(RegisteredFunction{nullptr, options, std::move(fn)});
}

std::shared_ptr<const RegisteredFunction> find_function(const std::string& name) {
  std::shared_lock lock(registry().mutex);
  auto it = registry().functions.find(name);
  return it == registry().functions.end() ? nullptr : it->second;
}

namespace {
std::string op_name(const void* op) {
  std::shared_lock lock(registry().mutex);
  auto it = registry().op_names.find(op);
  DDPSCOPE_CHECK(it != registry().op_names.end(),
                 "this function is not a built-in RPC op; register it with "
                 "rpc::register_function and call it by name");
  return it->second;
}
}  // namespace

FunctionRef::FunctionRef(Tensor (*binary_op)(const Tensor&, const Tensor&))
    : name_(op_name(reinterpret_cast<const void*>(binary_op))) {}
FunctionRef::FunctionRef(Tensor (*unary_op)(const Tensor&)) : name_(op_name(reinterpret_cast<const void*>(unary_op))) {}

}  // namespace ddpscope::rpc
