#include "process_group.h"

#include <algorithm>
#include <set>

namespace ddpscope::c10d {

ProcessGroup::ProcessGroup(int rank, int size, ProcessGroupOptions options)
    : rank_(rank), size_(size), options_(std::move(options)) {}

void ProcessGroup::check_rank(int peer, const char* op) const {
  DDPSCOPE_CHECK(peer >= 0 && peer < size_, op, ": rank ", peer, " is outside group '", options_.name, "' of ", size_,
                 " ranks (valid: 0..", size_ - 1, ")");
}

void ProcessGroup::check_tensor(const Tensor& t, const char* op) const {
  DDPSCOPE_CHECK(t.defined(), op, ": the tensor is undefined");
  DDPSCOPE_CHECK(t.is_contiguous(), op, ": ", t.describe(), " is not contiguous; call contiguous() first");
}

void ProcessGroup::check_list(const std::vector<Tensor>& list, const Tensor& like, const char* op,
                              const char* what) const {
  DDPSCOPE_CHECK(static_cast<int>(list.size()) == size_, op, ": ", what, " has ", list.size(), " tensors but group '",
                 options_.name, "' has ", size_, " ranks");
  for (size_t i = 0; i < list.size(); ++i) {
    check_tensor(list[i], op);
    DDPSCOPE_CHECK(
        list[i].sizes() == like.sizes() && list[i].dtype() == like.dtype() && list[i].device() == like.device(), op,
        ": ", what, "[", i, "] is ", list[i].describe(), " but must match ", like.describe());
  }
}

void ProcessGroup::check_subgroup_ranks(const std::vector<int>& ranks) const {
  DDPSCOPE_CHECK(!ranks.empty(), "new_group: the rank list is empty");
  std::set<int> seen;
  for (int r : ranks) {
    check_rank(r, "new_group");
    DDPSCOPE_CHECK(seen.insert(r).second, "new_group: rank ", r, " is listed twice");
  }
}

ProcessGroupOptions ProcessGroup::subgroup_options(const std::vector<int>& ranks) const {
  ProcessGroupOptions o = options_;
  std::string list;
  for (int r : ranks) {
    if (!list.empty()) list += ',';
    list += std::to_string(r);
  }
  o.name = detail::concat(options_.name, "[", list, "]");
  return o;
}

std::string ProcessGroup::describe(OpType op, uint64_t seq, const Tensor& t, const std::string& extra) const {
  std::string s = detail::concat(op_type_name(op), " #", seq);
  if (t.defined()) s += detail::concat(" ", t.describe());
  if (!extra.empty()) s += detail::concat(" (", extra, ")");
  return detail::concat(s, " on group '", options_.name, "'");
}

}  // namespace ddpscope::c10d
