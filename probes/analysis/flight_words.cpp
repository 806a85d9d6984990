#include "flight_words.h"

#include <algorithm>
#include <set>

#include "ddpscope/error.h"
#include "library_frames.h"

namespace ddpscope::probes::flight_words {

std::string list_text(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += i + 1 == ranks.size() ? " and " : ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string ranks_text(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "Rank " : "Ranks ") + list_text(ranks);
}

std::string lower_ranks(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + list_text(ranks);
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// "f32[1024]", "3 x f32[8]" (same shapes), "3 tensors, f32[8] first".
std::string tensors_text(const std::vector<std::vector<int64_t>>& sizes, const std::vector<std::string>& dtypes) {
  if (sizes.empty()) return {};
  const std::string dtype = dtypes.empty() ? std::string() : dtypes.front();
  if (sizes.size() == 1) return dtype + shape_text(sizes.front());
  const bool same = std::all_of(sizes.begin(), sizes.end(), [&](const auto& s) { return s == sizes.front(); });
  return same ? detail::concat(sizes.size(), " x ", dtype, shape_text(sizes.front()))
              : detail::concat(sizes.size(), " tensors, ", dtype, shape_text(sizes.front()), " first");
}

// Where a call came from: "loss allreduce of iteration 3", "iteration 3", or the top
// frame of PyTorch's stack ("forward at train.py:42"); "" when nothing is known.
std::string origin_text(const CollectiveRow& r) {
  if (!r.phase.empty() && r.iteration >= 0) return detail::concat(r.phase, " of iteration ", r.iteration);
  if (!r.phase.empty()) return r.phase;
  if (r.iteration > 0) return detail::concat("iteration ", r.iteration);
  if (!r.frames.empty()) {
    // The innermost frame of the user's code: PyTorch's own frames say only that a
    // collective was called.
    const auto user =
        std::find_if(r.frames.begin(), r.frames.end(), [](const StackFrame& f) { return !is_library_frame(f); });
    const StackFrame& f = user != r.frames.end() ? *user : r.frames.front();
    return detail::concat(f.name, " at ", f.file, ":", f.line);
  }
  return {};
}

std::string from_text(const CollectiveRow& r) {
  const std::string o = origin_text(r);
  return o.empty() ? std::string() : " in " + o;
}

// What PyTorch's recorders write (c10::toString of a ScalarType; the ops of its analyzer's
// COLLECTIVES and P2P sets), and what ddpscope's engine writes.
bool known_dtype(const std::string& d) {
  static const std::set<std::string> known = {"Byte",
                                              "Char",
                                              "Short",
                                              "Int",
                                              "Long",
                                              "Half",
                                              "Float",
                                              "Double",
                                              "ComplexHalf",
                                              "ComplexFloat",
                                              "ComplexDouble",
                                              "Bool",
                                              "QInt8",
                                              "QUInt8",
                                              "QInt32",
                                              "BFloat16",
                                              "QUInt4x2",
                                              "QUInt2x4",
                                              "Bits1x8",
                                              "Bits2x4",
                                              "Bits4x2",
                                              "Bits8",
                                              "Bits16",
                                              "Float8_e5m2",
                                              "Float8_e4m3fn",
                                              "Float8_e5m2fnuz",
                                              "Float8_e4m3fnuz",
                                              "UInt16",
                                              "UInt32",
                                              "UInt64",
                                              "Float8_e8m0fnu",
                                              "Float4_e2m1fn_x2",
                                              "UInt1",
                                              "UInt2",
                                              "UInt3",
                                              "UInt4",
                                              "UInt5",
                                              "UInt6",
                                              "UInt7",
                                              "Int1",
                                              "Int2",
                                              "Int3",
                                              "Int4",
                                              "Int5",
                                              "Int6",
                                              "Int7",
                                              "f32",
                                              "f64",
                                              "f16",
                                              "bf16",
                                              "i64",
                                              ""};
  return known.count(d) > 0;
}

bool known_op(const std::string& op) {
  static const std::set<std::string> known = {
      // PyTorch
      "broadcast", "_broadcast_oop", "reduce", "_reduce_oop", "all_gather", "all_gather_single", "all_gather_v",
      "all_reduce", "_all_gather_base", "all_gather_into_tensor_coalesced", "reduce_scatter", "reduce_scatter_single",
      "reduce_scatter_v", "reduce_scatter_tensor_coalesced", "_reduce_scatter_base", "gather", "scatter", "all_to_all",
      "all_to_all_single", "all_to_all_v_single", "all_reduce_barrier", "barrier", "split", "new_window",
      "allreduce_coalesced", "ALLGATHER_coalesced", "REDUCE_SCATTER_coalesced", "coalesced", "send", "recv",
      // ddpscope's engine
      "allreduce", "broadcast_coalesced", "allgather", "alltoall", "new_group"};
  return known.count(op) > 0;
}

// What is unknown in a record ("dtype \"zz\"", "state \"running\""); "" when nothing is.
std::string unknown_text(const CollectiveRow& r) {
  std::string out;
  const auto add = [&](const std::string& what, const std::string& value) {
    out += detail::concat(out.empty() ? "" : ", ", what, " \"", value.substr(0, 40), "\"");
  };
  if (!known_op(r.op)) add("op", r.op);
  for (const auto* list : {&r.input_dtypes, &r.output_dtypes})
    for (const std::string& d : *list)
      if (!known_dtype(d)) {
        add("dtype", d);
        break;
      }
  if (r.state_order() < 0) add("state", r.state);
  return out;
}

}  // namespace ddpscope::probes::flight_words
