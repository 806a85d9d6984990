// ProcessGroup: the collective-communication interface DDP and distributed autograd
// stand on (like PyTorch's c10d). Every call is asynchronous and returns a Work. Ops on
// one group complete in the order they were issued, the same order on every rank.
// Backends: ProcessGroupMPI (CPU tensors, OpenMPI), ProcessGroupNCCL (CUDA tensors).
//
//   auto pg = init_process_group({.backend = "mpi"});
//   Tensor t = Tensor::ones({4});
//   pg->allreduce(t)->wait();               // t == world size everywhere
//   auto sub = pg->new_group({0, 1});       // null on ranks outside {0, 1}
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "flight_recorder.h"
#include "tensor/tensor.h"
#include "types.h"
#include "work.h"

// The overrides every backend declares, spelled once here so that a new op reaches
// each backend's header through this list rather than by hand in each copy.
#define DDPSCOPE_PROCESS_GROUP_OVERRIDES                                                                           \
  std::shared_ptr<Work> allreduce(const Tensor& tensor, const AllreduceOptions& opts = {}) override;               \
  std::shared_ptr<Work> allreduce_coalesced(const std::vector<Tensor>& tensors, const AllreduceOptions& opts = {}) \
      override;                                                                                                    \
  std::shared_ptr<Work> broadcast(const Tensor& tensor, const BroadcastOptions& opts = {}) override;               \
  std::shared_ptr<Work> broadcast_coalesced(const std::vector<Tensor>& tensors, const std::vector<int>& roots,     \
                                            const CollectiveOptions& opts = {}) override;                          \
  std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input,                         \
                                  const CollectiveOptions& opts = {}) override;                                    \
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,                    \
                                       const ReduceScatterOptions& opts = {}) override;                            \
  std::shared_ptr<Work> alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,            \
                                 const CollectiveOptions& opts = {}) override;                                     \
  std::shared_ptr<Work> barrier(const CollectiveOptions& opts = {}) override;                                      \
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag = 0) override;                                 \
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag = 0) override;                                 \
  std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks) override;

namespace ddpscope::c10d {

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, ProcessGroupOptions options);
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const ProcessGroupOptions& options() const { return options_; }
  virtual std::string backend_name() const = 0;
  // Where this group's collectives take their tensors: the CPU for MPI, the rank's GPU
  // for NCCL. Callers exchanging small CPU data (DDP's shapes, orders and flags) move it
  // here first, as PyTorch's DDP puts such tensors on the module's device.
  virtual Device tensor_device() const { return Device::cpu(); }

  // In place: every rank ends with op(all ranks' tensors).
  virtual std::shared_ptr<Work> allreduce(const Tensor& tensor, const AllreduceOptions& opts = {}) = 0;
  // One op over several tensors of one dtype (DDP's buckets use it).
  virtual std::shared_ptr<Work> allreduce_coalesced(const std::vector<Tensor>& tensors,
                                                    const AllreduceOptions& opts = {}) = 0;
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, const BroadcastOptions& opts = {}) = 0;
  // One op: tensors[i] from rank roots[i], every transfer in flight at once (ZeRO sends
  // each parameter from its owner; one by one, each waited for the last).
  virtual std::shared_ptr<Work> broadcast_coalesced(const std::vector<Tensor>& tensors, const std::vector<int>& roots,
                                                    const CollectiveOptions& opts = {}) = 0;
  // outputs[r] receives rank r's input; outputs.size() == size().
  virtual std::shared_ptr<Work> allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                          const CollectiveOptions& opts = {}) = 0;
  // output = op over ranks of inputs[rank()]; inputs.size() == size().
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                               const ReduceScatterOptions& opts = {}) = 0;
  // outputs[r] receives rank r's inputs[rank()].
  virtual std::shared_ptr<Work> alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                         const CollectiveOptions& opts = {}) = 0;
  virtual std::shared_ptr<Work> barrier(const CollectiveOptions& opts = {}) = 0;
  virtual std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag = 0) = 0;
  virtual std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag = 0) = 0;

  // A group of the given ranks of this group (renumbered 0..n-1 in the order given).
  // Every rank of this group must call it; ranks outside `ranks` get nullptr.
  virtual std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks) = 0;

 protected:
  // Argument checks shared by the backends; each throws an Error naming the op.
  void check_rank(int peer, const char* op) const;
  void check_tensor(const Tensor& t, const char* op) const;
  void check_list(const std::vector<Tensor>& list, const Tensor& like, const char* op, const char* what) const;
  // broadcast_coalesced's arguments: one root per tensor, one dtype, all on the group.
  void check_roots(const std::vector<Tensor>& tensors, const std::vector<int>& roots, const char* op) const;
  // The options of the subgroup of `ranks`: this group's, named "parent[0,2]".
  ProcessGroupOptions subgroup_options(const std::vector<int>& ranks) const;
  void check_subgroup_ranks(const std::vector<int>& ranks) const;
  // "allreduce #7 f32[1024] (sum) on group 'world'"
  std::string describe(OpType op, uint64_t seq, const Tensor& t, const std::string& extra) const;
  Milliseconds effective_timeout(Milliseconds t) const { return t == kUseGroupTimeout ? options_.timeout : t; }

  // Flight-recorder hooks for the backends: a record for each op as it is issued
  // (returns its id, -1 when the recorder is off), then when it starts and completes.
  // `inputs`/`outputs`: the op's tensors (outputs empty: in place).
  int64_t record_scheduled(OpType op, int64_t collective_seq, int64_t p2p_seq, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& outputs, Milliseconds timeout, int peer = -1);
  // The same for a collective, from what the backends keep: the tensor that describes
  // it and its output list (their meaning per op: see the definition).
  int64_t record_collective(OpType op, uint64_t seq, const Tensor& described, const std::vector<Tensor>& outputs,
                            Milliseconds timeout);
  void record_started(int64_t record_id) { recorder_.start(record_id); }
  void record_completed(int64_t record_id) { recorder_.complete(record_id); }
  probes::FlightRecorder& recorder() { return recorder_; }

 private:
  int rank_;
  int size_;
  ProcessGroupOptions options_;
  probes::FlightRecorder& recorder_;
};

// Options for init_process_group.
struct InitOptions {
  std::string backend = "mpi";              // mpi | nccl
  Milliseconds timeout = kUseGroupTimeout;  // zero: 30 min or DDPSCOPE_PG_TIMEOUT_MS
};

// The default group of all ranks. Rank and world size come from mpirun (the MPI
// runtime); without mpirun the process is a world of one.
std::shared_ptr<ProcessGroup> init_process_group(const InitOptions& options = {});

}  // namespace ddpscope::c10d
