// Value: what RPC arguments and results are. None, bool, int, double, string, Tensor,
// RRef, or a list of these. Implicit from each, so calls read naturally:
//
//   Value r = rpc_sync("worker1", "add", {t1, t2});
//   Tensor sum = r.tensor();
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "tensor/tensor.h"

namespace ddpscope::rpc {

class RRef;
class Value;
using ValueList = std::vector<Value>;

class Value {
 public:
  Value() = default;
  Value(bool v) : v_(v) {}
  Value(int v) : v_(int64_t{v}) {}
  Value(int64_t v) : v_(v) {}
  Value(double v) : v_(v) {}
  Value(const char* v) : v_(std::string(v)) {}
  Value(std::string v) : v_(std::move(v)) {}
  Value(Tensor v) : v_(std::move(v)) {}
  Value(ValueList v) : v_(std::make_shared<ValueList>(std::move(v))) {}
  Value(RRef v);

  bool is_none() const { return v_.index() == 0; }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_double() const { return std::holds_alternative<double>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<ValueList>>(v_); }
  bool is_rref() const { return std::holds_alternative<std::shared_ptr<RRef>>(v_); }

  // Each throws an Error naming the type held when it is not the one asked for.
  bool to_bool() const;
  int64_t to_int() const;
  double to_double() const;  // ints convert
  const std::string& str() const;
  const Tensor& tensor() const;
  const ValueList& list() const;
  const RRef& rref() const;

  // "tensor f32[3, 3]", "list of 2", ...: for error messages.
  std::string type_name() const;

 private:
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, std::shared_ptr<ValueList>,
               std::shared_ptr<RRef>>
      v_;
};

}  // namespace ddpscope::rpc
