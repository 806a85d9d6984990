// ProcessGroupNCCL: the ProcessGroup on NCCL, for CUDA tensors.
//
// One NCCL communicator per group; the unique id travels from rank 0 over MPI. Ops run
// on the group's own CUDA stream, which first waits (through an event) for the stream
// that produced the tensors, so a collective never reads a gradient still being
// written. Each Work completes through a CUDA event recorded after the op: a completion
// thread polls the events in order, finishes the Works and fails any that outlive
// their timeout (then the communicator is aborted and the group is broken).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <condition_variable>
#include <deque>
#include <thread>

#include "process_group.h"

namespace ddpscope::c10d {

class ProcessGroupNCCL : public ProcessGroup {
 public:
  // The group of every rank started by mpirun; rank r uses GPU (local rank % GPUs).
  static std::shared_ptr<ProcessGroupNCCL> create_world(ProcessGroupOptions options);
  ProcessGroupNCCL(ncclComm_t comm, int rank, int size, int device, ProcessGroupOptions options);
  ~ProcessGroupNCCL() override;

  std::string backend_name() const override { return "nccl"; }
  Device tensor_device() const override { return Device::cuda(device_); }
  DDPSCOPE_PROCESS_GROUP_OVERRIDES

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }

 private:
  struct Pending {
    std::shared_ptr<Work> work;
    cudaEvent_t done = nullptr;
    std::vector<Tensor> keep_alive;  // temporaries the op reads or writes
    std::function<void()> after;     // host-side step once the op finished (copies out)
    std::chrono::steady_clock::time_point deadline;
    int64_t bytes = -1;      // for the probes
    int64_t record_id = -1;  // the flight recorder's
  };

  // Enqueues `launch` on the group's stream after the producer stream, records the
  // completion event and registers the Work with the completion thread.
  std::shared_ptr<Work> launch(OpType type, const Tensor& described, const std::string& extra,
                               std::vector<Tensor> outputs, Milliseconds timeout,
                               const std::function<void(cudaStream_t)>& enqueue, std::vector<Tensor> keep_alive = {},
                               std::function<void()> after = {});
  void completion_loop();
  void check_cuda_tensor(const Tensor& t, const char* op) const;

  ncclComm_t comm_ = nullptr;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  uint64_t next_seq_ = 0;
  std::mutex launch_mutex_;  // ops are enqueued on the stream in issue order
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;
  bool stop_ = false;
  bool broken_ = false;
  std::string broken_reason_;
  std::thread completion_;
};

}  // namespace ddpscope::c10d
