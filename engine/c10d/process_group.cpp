#include "process_group.h"

#include <algorithm>
#include <set>

namespace ddpscope::c10d {

namespace {

std::vector<int> members(const ProcessGroupOptions& o, int size) {
  if (!o.global_ranks.empty()) return o.global_ranks;
  std::vector<int> all(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    all[static_cast<size_t>(r)] = r;
  return all;
}

// What a dump shows of a list of tensors: the first's shape, how many, one dtype.
probes::TensorsSummary summarize(const std::vector<Tensor>& tensors) {
  probes::TensorsSummary s;
  for (const Tensor& t : tensors) {
    if (!t.defined()) continue;
    if (s.count == 0) {
      s.ndim = static_cast<int32_t>(t.dim());
      for (int d = 0; d < std::min<int>(s.ndim, probes::TensorsSummary::kMaxDims); ++d)
        s.dims[d] = t.size(d);
      s.dtype = dtype_name(t.dtype());
    } else if (t.dim() != s.ndim || !std::equal(s.dims, s.dims + std::min<int>(s.ndim, 6), t.sizes().begin())) {
      s.same_shape = false;
    }
    ++s.count;
    s.total_numel += t.numel();
  }
  return s;
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size, ProcessGroupOptions options)
    : rank_(rank),
      size_(size),
      options_(std::move(options)),
      recorder_(probes::FlightRecorder::create({.name = options_.name,
                                                .desc = options_.description,
                                                .ranks = members(options_, size),
                                                .rank_in_group = rank})) {}

int64_t ProcessGroup::record_scheduled(OpType op, int64_t collective_seq, int64_t p2p_seq,
                                       const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                                       Milliseconds timeout, int peer) {
  if (!recorder_.on()) return -1;
  probes::CollectiveRecord r;
  r.collective_seq = collective_seq;
  r.p2p_seq = p2p_seq;
  r.op = op_type_name(op);
  r.input = summarize(inputs);
  r.output = summarize(outputs);
  r.peer = peer;
  r.timeout_ms = effective_timeout(timeout).count();
  return recorder_.schedule(r);
}

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

void ProcessGroup::check_roots(const std::vector<Tensor>& tensors, const std::vector<int>& roots,
                               const char* op) const {
  DDPSCOPE_CHECK(!tensors.empty(), op, ": no tensors given");
  DDPSCOPE_CHECK(roots.size() == tensors.size(), op, ": ", tensors.size(), " tensors but ", roots.size(),
                 " roots; give each tensor the rank it comes from");
  for (size_t i = 0; i < tensors.size(); ++i) {
    check_tensor(tensors[i], op);
    check_rank(roots[i], op);
    DDPSCOPE_CHECK(tensors[i].dtype() == tensors.front().dtype(), op, ": dtypes differ (", tensors.front().describe(),
                   " and ", tensors[i].describe(), "); coalesce one dtype at a time");
  }
}

int64_t ProcessGroup::record_collective(OpType op, uint64_t seq, const Tensor& described,
                                        const std::vector<Tensor>& outputs, Milliseconds timeout) {
  if (!recorder_.on()) return -1;
  const auto one = described.defined() ? std::vector<Tensor>{described} : std::vector<Tensor>{};
  const auto s = static_cast<int64_t>(seq);
  switch (op) {
    case OpType::AllreduceCoalesced:  // the outputs are the tensors, reduced in place
    case OpType::BroadcastCoalesced: return record_scheduled(op, s, -1, outputs, {}, timeout);
    case OpType::Allgather: return record_scheduled(op, s, -1, one, outputs, timeout);
    case OpType::Alltoall: return record_scheduled(op, s, -1, outputs, outputs, timeout);
    case OpType::ReduceScatter:  // `described` is the output; each rank gives size() inputs of its shape
      return record_scheduled(op, s, -1, std::vector<Tensor>(static_cast<size_t>(size_), described), one, timeout);
    default: return record_scheduled(op, s, -1, one, {}, timeout);
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
  const std::vector<int> parent = members(options_, size_);
  o.global_ranks.clear();
  for (int r : ranks)
    o.global_ranks.push_back(parent.at(static_cast<size_t>(r)));
  return o;
}

std::string ProcessGroup::describe(OpType op, uint64_t seq, const Tensor& t, const std::string& extra) const {
  std::string s = detail::concat(op_type_name(op), " #", seq);
  if (t.defined()) s += detail::concat(" ", t.describe());
  if (!extra.empty()) s += detail::concat(" (", extra, ")");
  return detail::concat(s, " on group '", options_.name, "'");
}

}  // namespace ddpscope::c10d
