#include "process_group_nccl.h"
#include "ddpscope/log.h"

#include <cstdio>
#include <cstdlib>

#include "mpi_environment.h"
#include "probe.h"
#include "tensor/kernels.h"
#include "ddpscope/env.h"

#define NCCL_CHECK(expr)                                                                                             \
  do {                                                                                                               \
    const ncclResult_t r_ = (expr);                                                                                  \
    if (r_ != ncclSuccess) {                                                                                         \
      throw ::ddpscope::c10d::CommError(                                                                             \
          ::ddpscope::detail::concat("NCCL call ", #expr, " failed: ", ncclGetErrorString(r_)), __FILE__, __LINE__); \
    }                                                                                                                \
  } while (0)

#define CUDA_RT_CHECK(expr)                                                                                         \
  do {                                                                                                              \
    const cudaError_t e_ = (expr);                                                                                  \
    if (e_ != cudaSuccess) {                                                                                        \
      throw ::ddpscope::Error(::ddpscope::detail::concat("CUDA call ", #expr, " failed: ", cudaGetErrorString(e_)), \
                              __FILE__, __LINE__);                                                                  \
    }                                                                                                               \
  } while (0)

namespace ddpscope::c10d {
namespace {

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::I64: return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Avg: return ncclAvg;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Product: return ncclProd;
  }
  return ncclSum;
}

Tensor flat_like(const std::vector<Tensor>& list) {
  int64_t total = 0;
  for (const Tensor& t : list)
    total += t.numel();
  return Tensor::empty({total}, list.front().dtype(), list.front().device());
}

int local_rank(int world_rank) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const int64_t r = env_int(var, -1); r >= 0) return static_cast<int>(r);
  }
  return world_rank;
}

}  // namespace

std::shared_ptr<ProcessGroupNCCL> ProcessGroupNCCL::create_world(ProcessGroupOptions options) {
  MpiEnvironment::ensure_initialized();
  const int rank = MpiEnvironment::world_rank(), size = MpiEnvironment::world_size();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    throw DDPSCOPE_ERROR("backend nccl: rank ", rank, " sees no CUDA device; use --backend mpi on CPU machines");
  }
  const int device = local_rank(rank) % devices;
  CUDA_RT_CHECK(cudaSetDevice(device));
  ncclUniqueId id;
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRank(&comm, size, id, rank));
  return std::make_shared<ProcessGroupNCCL>(comm, rank, size, device, std::move(options));
}

ProcessGroupNCCL::ProcessGroupNCCL(ncclComm_t comm, int rank, int size, int device, ProcessGroupOptions options)
    : ProcessGroup(rank, size, std::move(options)), comm_(comm), device_(device) {
  CUDA_RT_CHECK(cudaSetDevice(device_));
  CUDA_RT_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  completion_ = std::thread([this] { completion_loop(); });
}

ProcessGroupNCCL::~ProcessGroupNCCL() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  completion_.join();
  if (broken_) {
    ncclCommAbort(comm_);
  } else {
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
  }
  cudaStreamDestroy(stream_);
}

void ProcessGroupNCCL::check_cuda_tensor(const Tensor& t, const char* op) const {
  check_tensor(t, op);
  DDPSCOPE_CHECK(t.device().is_cuda() && t.device().index == device_, op, ": ", t.describe(),
                 " is not on this rank's GPU cuda:", device_,
                 "; the nccl backend takes tensors on the rank's GPU (use the mpi backend for CPU tensors)");
}

std::shared_ptr<Work> ProcessGroupNCCL::launch(OpType type, const Tensor& described, const std::string& extra,
                                               std::vector<Tensor> outputs, Milliseconds timeout,
                                               const std::function<void(cudaStream_t)>& enqueue,
                                               std::vector<Tensor> keep_alive, std::function<void()> after) {
  if (broken_) {
    throw CommError(
        detail::concat(op_type_name(type), " refused: group '", options().name, "' is broken (", broken_reason_, ")"),
        __FILE__, __LINE__);
  }
  std::lock_guard<std::mutex> launch_lock(launch_mutex_);
  const uint64_t seq = next_seq_++;
  const Milliseconds limit = effective_timeout(timeout);
  auto work = std::make_shared<Work>(type, seq, describe(type, seq, described, extra), outputs, limit, rank());
  CUDA_RT_CHECK(cudaSetDevice(device_));
  // The producer of the tensors is the legacy default stream the kernels run on.
  cudaEvent_t ready = nullptr, done = nullptr;
  CUDA_RT_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CUDA_RT_CHECK(cudaEventRecord(ready, cudaStreamLegacy));
  CUDA_RT_CHECK(cudaStreamWaitEvent(stream_, ready, 0));
  cudaEventDestroy(ready);  // released once the wait has been enqueued
  // One sequence for every op of the group: send/recv are recorded as point-to-point.
  const bool p2p = type == OpType::Send || type == OpType::Recv;
  const int64_t record_id = p2p ? record_scheduled(type, -1, static_cast<int64_t>(seq), {described}, {}, limit)
                                : record_collective(type, seq, described, work->outputs(), limit);
  work->mark_started();  // queued on the stream now; it runs when the stream reaches it
  record_started(record_id);
  if (probes::enabled()) {
    // Its start: without a PgOp span of the same name and seq after it, the hang view
    // knows the op never completed.
    probes::instant(probes::Kind::PgOpStart, probes::intern(op_type_name(type), __FILE__, __LINE__),
                    {.bytes = described.defined() ? static_cast<int64_t>(described.nbytes()) : -1,
                     .id = static_cast<int64_t>(seq)});
  }
  enqueue(stream_);
  CUDA_RT_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CUDA_RT_CHECK(cudaEventRecord(done, stream_));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back({work, done, std::move(keep_alive), std::move(after), std::chrono::steady_clock::now() + limit,
                        described.defined() ? static_cast<int64_t>(described.nbytes()) : -1, record_id});
  }
  cv_.notify_all();
  return work;
}

void ProcessGroupNCCL::completion_loop() {
  cudaSetDevice(device_);
  probes::set_thread_name("comm: " + options().name + " nccl");
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (pending_.empty()) return;
    Pending& p = pending_.front();
    const cudaError_t state = cudaEventQuery(p.done);
    if (state == cudaErrorNotReady) {
      if (std::chrono::steady_clock::now() > p.deadline) {
        const std::string message = timeout_message(detail::concat(
            "timeout: rank ", rank(), " waited for ", p.work->description(), " to complete on GPU cuda:", device_,
            "; a peer has not joined it. The NCCL communicator is aborted"));
        broken_ = true;
        broken_reason_ = message;
        ncclCommAbort(comm_);
        log::error("{}", message);
        probes::FlightRecorder::dump_all(message);
        for (Pending& q : pending_) {
          // The op that ran out of time is the first; those queued behind it never ran.
          const bool timed_out = &q == &pending_.front();
          q.work->finish_with_error(
              std::make_exception_ptr(CommError(message, *q.work, timed_out, __FILE__, __LINE__)));
        }
        pending_.clear();
        continue;
      }
      // Poll: a GPU op gives no host notification without occupying a thread in a
      // blocking synchronise, which could not observe the timeout.
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
      lock.lock();
      continue;
    }
    Pending done = std::move(p);
    pending_.pop_front();
    lock.unlock();
    cudaEventDestroy(done.done);
    if (state != cudaSuccess) {
      done.work->finish_with_error(std::make_exception_ptr(
          Error(detail::concat(done.work->description(), " failed on the GPU: ", cudaGetErrorString(state)), __FILE__,
                __LINE__)));
    } else {
      try {
        if (done.after) done.after();
        record_completed(done.record_id);
        done.work->finish();
        if (probes::enabled()) {
          // Enqueued -> seen complete by this thread (polled every 50 us).
          const auto ns = [](std::chrono::steady_clock::time_point t) {
            return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
          };
          probes::record(probes::Kind::PgOp, probes::intern(op_type_name(done.work->op_type()), __FILE__, __LINE__),
                         ns(done.work->started_at()), ns(done.work->finished_at()),
                         {.bytes = done.bytes, .id = static_cast<int64_t>(done.work->sequence_number())});
        }
      } catch (...) {
        done.work->finish_with_error(std::current_exception());
      }
    }
    lock.lock();
  }
}

std::shared_ptr<Work> ProcessGroupNCCL::allreduce(const Tensor& t, const AllreduceOptions& opts) {
  check_cuda_tensor(t, "allreduce");
  return launch(OpType::Allreduce, t, reduce_op_name(opts.op), {t}, opts.timeout, [&](cudaStream_t s) {
    NCCL_CHECK(ncclAllReduce(t.raw_data(), t.raw_data(), t.numel(), nccl_type(t.dtype()), nccl_op(opts.op), comm_, s));
  });
}

std::shared_ptr<Work> ProcessGroupNCCL::allreduce_coalesced(const std::vector<Tensor>& tensors,
                                                            const AllreduceOptions& opts) {
  DDPSCOPE_CHECK(!tensors.empty(), "allreduce_coalesced: no tensors given");
  for (const Tensor& t : tensors)
    check_cuda_tensor(t, "allreduce_coalesced");
  const Tensor described = flat_like(tensors);
  return launch(OpType::AllreduceCoalesced, described,
                detail::concat(reduce_op_name(opts.op), ", ", tensors.size(), " tensors"), tensors, opts.timeout,
                [&](cudaStream_t s) {
                  NCCL_CHECK(ncclGroupStart());
                  for (const Tensor& t : tensors) {
                    NCCL_CHECK(ncclAllReduce(t.raw_data(), t.raw_data(), t.numel(), nccl_type(t.dtype()),
                                             nccl_op(opts.op), comm_, s));
                  }
                  NCCL_CHECK(ncclGroupEnd());
                });
}

std::shared_ptr<Work> ProcessGroupNCCL::broadcast(const Tensor& t, const BroadcastOptions& opts) {
  check_cuda_tensor(t, "broadcast");
  check_rank(opts.root, "broadcast");
  return launch(OpType::Broadcast, t, detail::concat("root ", opts.root), {t}, opts.timeout, [&](cudaStream_t s) {
    NCCL_CHECK(ncclBroadcast(t.raw_data(), t.raw_data(), t.numel(), nccl_type(t.dtype()), opts.root, comm_, s));
  });
}

std::shared_ptr<Work> ProcessGroupNCCL::broadcast_coalesced(const std::vector<Tensor>& tensors,
                                                            const std::vector<int>& roots,
                                                            const CollectiveOptions& opts) {
  check_roots(tensors, roots, "broadcast_coalesced");
  for (const Tensor& t : tensors)
    check_cuda_tensor(t, "broadcast_coalesced");
  return launch(OpType::BroadcastCoalesced, flat_like(tensors), detail::concat(tensors.size(), " tensors"), tensors,
                opts.timeout, [&](cudaStream_t s) {
                  NCCL_CHECK(ncclGroupStart());
                  for (size_t i = 0; i < tensors.size(); ++i) {
                    NCCL_CHECK(ncclBroadcast(tensors[i].raw_data(), tensors[i].raw_data(), tensors[i].numel(),
                                             nccl_type(tensors[i].dtype()), roots[i], comm_, s));
                  }
                  NCCL_CHECK(ncclGroupEnd());
                });
}

std::shared_ptr<Work> ProcessGroupNCCL::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                                  const CollectiveOptions& opts) {
  check_cuda_tensor(input, "allgather");
  check_list(outputs, input, "allgather", "outputs");
  Tensor flat = flat_like(outputs);
  return launch(
      OpType::Allgather, input, "", outputs, opts.timeout,
      [&](cudaStream_t s) {
        NCCL_CHECK(ncclAllGather(input.raw_data(), flat.raw_data(), input.numel(), nccl_type(input.dtype()), comm_, s));
        const size_t bytes = input.nbytes();
        for (size_t r = 0; r < outputs.size(); ++r) {
          CUDA_RT_CHECK(cudaMemcpyAsync(outputs[r].raw_data(), static_cast<char*>(flat.raw_data()) + r * bytes, bytes,
                                        cudaMemcpyDeviceToDevice, s));
        }
      },
      {flat});
}

std::shared_ptr<Work> ProcessGroupNCCL::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                       const ReduceScatterOptions& opts) {
  check_cuda_tensor(output, "reduce_scatter");
  check_list(inputs, output, "reduce_scatter", "inputs");
  Tensor flat = flat_like(inputs);
  return launch(OpType::ReduceScatter, output, reduce_op_name(opts.op), {output}, opts.timeout,
                [&](cudaStream_t s) {
                  const size_t bytes = output.nbytes();
                  for (size_t r = 0; r < inputs.size(); ++r) {
                    CUDA_RT_CHECK(cudaMemcpyAsync(static_cast<char*>(flat.raw_data()) + r * bytes, inputs[r].raw_data(),
                                                  bytes, cudaMemcpyDeviceToDevice, s));
                  }
                  NCCL_CHECK(ncclReduceScatter(flat.raw_data(), output.raw_data(), output.numel(),
                                               nccl_type(output.dtype()), nccl_op(opts.op), comm_, s));
                },
                {flat});
}

std::shared_ptr<Work> ProcessGroupNCCL::alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                                 const CollectiveOptions& opts) {
  DDPSCOPE_CHECK(!inputs.empty(), "alltoall: no input tensors given");
  check_cuda_tensor(inputs.front(), "alltoall");
  check_list(inputs, inputs.front(), "alltoall", "inputs");
  check_list(outputs, inputs.front(), "alltoall", "outputs");
  return launch(
      OpType::Alltoall, inputs.front(), "", outputs, opts.timeout,
      [&](cudaStream_t s) {
        NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < size(); ++r) {
          const Tensor& in = inputs[r];
          NCCL_CHECK(ncclSend(in.raw_data(), in.numel(), nccl_type(in.dtype()), r, comm_, s));
          NCCL_CHECK(ncclRecv(outputs[r].raw_data(), in.numel(), nccl_type(in.dtype()), r, comm_, s));
        }
        NCCL_CHECK(ncclGroupEnd());
      },
      inputs);
}

std::shared_ptr<Work> ProcessGroupNCCL::barrier(const CollectiveOptions& opts) {
  Tensor one = Tensor::ones({1}, DType::F32, Device::cuda(device_));
  return launch(OpType::Barrier, Tensor(), "", {}, opts.timeout,
                [&](cudaStream_t s) {
                  NCCL_CHECK(ncclAllReduce(one.raw_data(), one.raw_data(), 1, ncclFloat32, ncclSum, comm_, s));
                },
                {one});
}

std::shared_ptr<Work> ProcessGroupNCCL::send(const Tensor& t, int dst, int tag) {
  check_cuda_tensor(t, "send");
  check_rank(dst, "send");
  DDPSCOPE_CHECK(dst != rank(), "send: rank ", dst, " is this rank; send to another rank");
  return launch(
      OpType::Send, t, detail::concat("to rank ", dst, ", tag ", tag), {t}, kUseGroupTimeout,
      [&](cudaStream_t s) { NCCL_CHECK(ncclSend(t.raw_data(), t.numel(), nccl_type(t.dtype()), dst, comm_, s)); });
}

std::shared_ptr<Work> ProcessGroupNCCL::recv(const Tensor& t, int src, int tag) {
  check_cuda_tensor(t, "recv");
  check_rank(src, "recv");
  DDPSCOPE_CHECK(src != rank(), "recv: rank ", src, " is this rank; receive from another rank");
  return launch(
      OpType::Recv, t, detail::concat("from rank ", src, ", tag ", tag), {t}, kUseGroupTimeout,
      [&](cudaStream_t s) { NCCL_CHECK(ncclRecv(t.raw_data(), t.numel(), nccl_type(t.dtype()), src, comm_, s)); });
}

std::shared_ptr<ProcessGroup> ProcessGroupNCCL::new_group(const std::vector<int>& ranks) {
  check_subgroup_ranks(ranks);
  const auto it = std::find(ranks.begin(), ranks.end(), rank());
  const bool member = it != ranks.end();
  ncclComm_t sub = nullptr;
  {
    std::lock_guard<std::mutex> launch_lock(launch_mutex_);
    CUDA_RT_CHECK(cudaStreamSynchronize(stream_));
    NCCL_CHECK(ncclCommSplit(comm_, member ? 0 : NCCL_SPLIT_NOCOLOR, member ? static_cast<int>(it - ranks.begin()) : 0,
                             &sub, nullptr));
  }
  if (!member) return nullptr;
  return std::make_shared<ProcessGroupNCCL>(sub, static_cast<int>(it - ranks.begin()), static_cast<int>(ranks.size()),
                                            device_, subgroup_options(ranks));
}

}  // namespace ddpscope::c10d
