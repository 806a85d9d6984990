#include "process_group_mpi.h"
#include "ddpscope/log.h"

#include <climits>
#include <cstdio>
#include <cstring>

#include "cpu_wait.h"
#include "mpi_wait.h"
#include "probe.h"
#include "ring_allreduce.h"
#include "tensor/kernels.h"
#include "ddpscope/env.h"

namespace ddpscope::c10d {
namespace {

// MPI counts are ints: larger buffers go in chunks of this many elements.
constexpr int64_t kMaxChunk = int64_t{1} << 30;

// Whether this group reduces with the ring of ring_allreduce.h: when its ranks span
// hosts (they talk over TCP), or as DDPSCOPE_MPI_RING=1/0 says. Collective: every rank
// of `comm` calls it and gets the same answer.
bool use_ring(MPI_Comm comm) {
  if (const int64_t ring = env_int("DDPSCOPE_MPI_RING", -1, 0, 1); ring >= 0) return ring == 1;
  return !every_rank_on_this_host(comm);
}

// The ring sums f32 and f64 (avg divides after); other ops and dtypes use MPI_Allreduce.
bool ring_applies(ReduceOp op, DType dtype) {
  return (op == ReduceOp::Sum || op == ReduceOp::Avg) && (dtype == DType::F32 || dtype == DType::F64);
}

// The sequence number of the collective the lane thread runs now: the ring records its
// steps with it.
thread_local int64_t t_running_seq = -1;

void ring_sum(void* data, int64_t numel, DType dtype, MPI_Comm comm, std::vector<char>& scratch) {
  RingOptions options;
  options.seq = t_running_seq;
  if (dtype == DType::F32) {
    ring_allreduce_sum(static_cast<float*>(data), numel, comm, scratch, options);
  } else {
    ring_allreduce_sum(static_cast<double*>(data), numel, comm, scratch, options);
  }
}

int int_count(int64_t n, const char* op) {
  DDPSCOPE_CHECK(n <= INT_MAX, op, ": ", n, " elements exceed MPI's int count; split the tensor");
  return static_cast<int>(n);
}

void divide_in_place(const Tensor& t, int n) {
  if (is_compute_type(t.dtype())) {
    kernels::scale_(t, 1.0 / n);
    return;
  }
  Tensor f = t.to(DType::F32);  // f16/bf16: divide in f32, store back rounded
  kernels::scale_(f, 1.0 / n);
  kernels::copy(t, f);
}

Tensor flatten_into(const std::vector<Tensor>& list) {
  int64_t total = 0;
  for (const Tensor& t : list)
    total += t.numel();
  Tensor flat = Tensor::empty({total}, list.front().dtype());
  int64_t offset = 0;
  for (const Tensor& t : list) {
    kernels::copy(flat.narrow(0, offset, t.numel()), t.view({t.numel()}));
    offset += t.numel();
  }
  return flat;
}

void unflatten_from(const Tensor& flat, const std::vector<Tensor>& list) {
  int64_t offset = 0;
  for (const Tensor& t : list) {
    kernels::copy(t.view({t.numel()}), flat.narrow(0, offset, t.numel()));
    t.bump_version();
    offset += t.numel();
  }
}

int64_t abort_grace_ms() { return env_int("DDPSCOPE_ABORT_GRACE_MS", 5000); }

}  // namespace

std::shared_ptr<ProcessGroupMPI> ProcessGroupMPI::create_world(ProcessGroupOptions options) {
  MpiEnvironment::ensure_initialized();
  MPI_Comm dup;
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
  return std::make_shared<ProcessGroupMPI>(MpiComm(dup), std::move(options));
}

namespace {
int comm_rank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int comm_size(MPI_Comm c) {
  int s = 0;
  MPI_Comm_size(c, &s);
  return s;
}
}  // namespace

ProcessGroupMPI::ProcessGroupMPI(MpiComm comm, ProcessGroupOptions options)
    : ProcessGroup(comm_rank(comm.get()), comm_size(comm.get()), std::move(options)), comm_(std::move(comm)) {
  MPI_Comm check;
  MPI_CHECK(MPI_Comm_dup(comm_.get(), &check));
  check_comm_ = MpiComm(check);
  if (use_ring(comm_.get())) {
    MPI_Comm ring;
    MPI_CHECK(MPI_Comm_dup(comm_.get(), &ring));  // its own: never matches a user's send/recv
    ring_comm_ = MpiComm(ring);
  } else {
    // DDPSCOPE_ARRIVAL_BOARD=0: the polled barrier instead (where shared memory or futexes
    // between processes misbehave, in a sandbox say).
    arrival_board_ = HostArrivalBoard::create(comm_.get(), env_int("DDPSCOPE_ARRIVAL_BOARD", 1, 0, 1) == 1);
  }
  collectives_.name = "collectives";
  p2p_.name = "point-to-point";
  collectives_.thread = std::thread([this] { run_lane(collectives_); });
  p2p_.thread = std::thread([this] { run_lane(p2p_); });
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

ProcessGroupMPI::~ProcessGroupMPI() {
  if (broken_) {
    // A worker is blocked inside MPI for good: joining it would hang this process.
    log::error("rank {}: ending the job: {}", rank(), broken_reason_);
    MpiEnvironment::abort_job(3);
  }
  for (Lane* lane : {&collectives_, &p2p_}) {
    {
      std::lock_guard<std::mutex> lock(lane->mutex);
      lane->stop = true;
    }
    lane->cv.notify_all();
    lane->thread.join();
  }
  {
    std::lock_guard<std::mutex> lock(watchdog_mutex_);
    watchdog_stop_ = true;
  }
  watchdog_cv_.notify_all();
  watchdog_.join();
}

void ProcessGroupMPI::check_usable(const char* op) const {
  if (broken_) {
    throw CommError(
        detail::concat(op, " on group '", options().name, "' refused: the group is broken (", broken_reason_, ")"),
        __FILE__, __LINE__);
  }
}

void ProcessGroupMPI::check_cpu(const Tensor& t, const char* op) const {
  check_tensor(t, op);
  DDPSCOPE_CHECK(t.device().is_cpu(), op, ": ", t.describe(),
                 " is on a GPU; the mpi backend takes CPU tensors (use the nccl backend for GPU tensors)");
}

void ProcessGroupMPI::push(Lane& lane, Op op) {
  {
    std::lock_guard<std::mutex> lock(lane.mutex);
    lane.queue.push_back(std::move(op));
  }
  lane.cv.notify_one();
}

std::shared_ptr<Work> ProcessGroupMPI::enqueue_collective(OpType type, const Tensor& described,
                                                          const std::string& extra, std::vector<Tensor> outputs,
                                                          Milliseconds timeout, std::function<void()> run, int root) {
  check_usable(op_type_name(type));
  const uint64_t seq = next_collective_seq_++;
  const Milliseconds limit = effective_timeout(timeout);
  auto work =
      std::make_shared<Work>(type, seq, describe(type, seq, described, extra), std::move(outputs), limit, rank());
  Fingerprint f;
  f.op = static_cast<int32_t>(type);
  f.seq = seq;
  f.root = root;
  if (described.defined()) {
    f.dtype = static_cast<int32_t>(described.dtype());
    f.ndim = static_cast<int32_t>(described.dim());
    f.numel = described.numel();
    for (int i = 0; i < std::min<int>(f.ndim, 6); ++i)
      f.dims[i] = described.size(i);
  }
  const int64_t record_id = record_collective(type, seq, described, work->outputs(), limit);
  push(collectives_, {work, std::move(run), limit, f,
                      detail::concat("every rank of group '", options().name, "' (", size(),
                                     " ranks) to enter the same ", op_type_name(type)),
                      described.defined() ? static_cast<int64_t>(described.nbytes()) : -1, -1, record_id});
  return work;
}

std::string ProcessGroupMPI::fingerprint_str(int rank, const Fingerprint& f) const {
  std::string s = detail::concat("rank ", rank, " ", op_type_name(static_cast<OpType>(f.op)), " #", f.seq);
  if (f.dtype >= 0) {
    Shape shape(f.dims, f.dims + std::min<int>(f.ndim, 6));
    s += detail::concat(" ", dtype_name(static_cast<DType>(f.dtype)), shape_str(shape));
  }
  if (f.root >= 0) s += detail::concat(" root ", f.root);
  return s;
}

void ProcessGroupMPI::check_consistency(const Op& op) {
  std::vector<Fingerprint> all(static_cast<size_t>(size()));
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Iallgather(&op.fingerprint, sizeof(Fingerprint), MPI_BYTE, all.data(), sizeof(Fingerprint), MPI_BYTE,
                           check_comm_.get(), &request));
  wait_all_backing_off(std::span<MPI_Request>(&request, 1));
  for (int r = 1; r < size(); ++r) {
    if (std::memcmp(&all[r], &all[0], sizeof(Fingerprint)) != 0) {
      throw CommError(
          detail::concat("collective mismatch on group '", options().name, "': ", fingerprint_str(0, all[0]), " vs ",
                         fingerprint_str(r, all[r]), "; every rank must issue the same collectives in the same order"),
          __FILE__, __LINE__);
    }
  }
}

void ProcessGroupMPI::run_lane(Lane& lane) {
  probes::set_thread_name("comm: " + options().name + " " + lane.name);
  while (true) {
    Op op;
    int64_t cpu_wait_before = -1;  // when it sleeps until handed an op (cpu_wait.h)
    {
      std::unique_lock<std::mutex> lock(lane.mutex);
      if (lane.queue.empty() && probes::enabled()) cpu_wait_before = probes::thread_cpu_wait_ns();
      lane.cv.wait(lock, [&] { return lane.stop || !lane.queue.empty(); });
      if (lane.queue.empty()) return;  // stop requested and drained
      op = std::move(lane.queue.front());
      lane.queue.pop_front();
      lane.in_flight = op.work;
      lane.in_flight_waits_for = op.waits_for;
      lane.in_flight_timeout = op.timeout;
      lane.deadline = std::chrono::steady_clock::now() + op.timeout;
    }
    // Woken for the op but kept from a core: the rank arrives late by that much.
    if (cpu_wait_before >= 0)
      if (const int64_t after = probes::thread_cpu_wait_ns(); after > cpu_wait_before)
        probes::add_comm_cpu_wait_ns(after - cpu_wait_before);
    try {
      check_usable(op_type_name(op.work->op_type()));
      if (options().check_consistency && &lane == &collectives_) check_consistency(op);
      op.work->mark_started();
      record_started(op.record_id);
      if (probes::enabled()) {
        probes::instant(probes::Kind::PgOpStart, probes::intern(op_type_name(op.work->op_type()), __FILE__, __LINE__),
                        {.peer = static_cast<int16_t>(op.peer),
                         .bytes = op.bytes,
                         .id = static_cast<int64_t>(op.work->sequence_number())});
      }
      {
        DDPSCOPE_SPAN_DYNAMIC(span, probes::Kind::PgOp, op_type_name(op.work->op_type()));
        span.args().bytes = op.bytes;
        span.args().id = static_cast<int64_t>(op.work->sequence_number());
        span.args().peer = static_cast<int16_t>(op.peer);
        t_running_seq = static_cast<int64_t>(op.work->sequence_number());
        // Late ranks are waited for here, asleep (mpi_wait.h), not inside the collective's
        // own poll; the wait stays inside the op's span, as before. On one host only: across
        // hosts (the ring's groups) the barrier would cost a network round trip a collective,
        // and a link cut inside it left the hang's verdict unable to name the cut-off rank
        // (the host-cut fault row); there the collective's own poll waits, as before.
        // On one host the ranks meet on a shared futex board: the last arrival wakes the others
        // at once, where the polled barrier noticed it only at its next poll.
        if (&lane == &collectives_ && ring_comm_.get() == MPI_COMM_NULL) {
          if (arrival_board_)
            arrival_board_->arrive_and_wait();
          else
            wait_for_every_rank(check_comm_.get());
        }
        op.run();
        t_running_seq = -1;
      }
      record_completed(op.record_id);
      op.work->finish();
    } catch (...) {
      op.work->finish_with_error(std::current_exception());
    }
    std::lock_guard<std::mutex> lock(lane.mutex);
    lane.in_flight.reset();
  }
}

void ProcessGroupMPI::fail_timed_out(Lane& lane) {
  std::shared_ptr<Work> work;
  std::string waits_for;
  Milliseconds timeout{0};
  std::deque<Op> dropped;
  {
    std::lock_guard<std::mutex> lock(lane.mutex);
    work = lane.in_flight;
    waits_for = lane.in_flight_waits_for;
    timeout = lane.in_flight_timeout;
    lane.in_flight.reset();  // the worker stays blocked in MPI; the op is abandoned
  }
  const std::string message = timeout_message(detail::concat("timeout: rank ", rank(), " waited ", timeout.count(),
                                                             " ms in ", work->description(), " for ", waits_for,
                                                             "; MPI cannot cancel it, so this job ends"));
  broken_reason_ = message;
  broken_ = true;
  MpiEnvironment::mark_abandoned();
  log::error("{}", message);
  // Every group's records, into the run file and a file beside it (the collector may be gone).
  probes::FlightRecorder::dump_all(message);
  work->finish_with_error(std::make_exception_ptr(CommError(message, *work, /*timed_out=*/true, __FILE__, __LINE__)));
  for (Lane* other : {&collectives_, &p2p_}) {
    std::lock_guard<std::mutex> lock(other->mutex);
    for (Op& op : other->queue)
      dropped.push_back(std::move(op));
    other->queue.clear();
  }
  for (Op& op : dropped) {
    op.work->finish_with_error(
        std::make_exception_ptr(CommError("not run: the group broke before it (" + message + ")", *op.work,
                                          /*timed_out=*/false, __FILE__, __LINE__)));
  }
}

void ProcessGroupMPI::watchdog_loop() {
  std::unique_lock<std::mutex> lock(watchdog_mutex_);
  while (!watchdog_stop_) {
    const auto now = std::chrono::steady_clock::now();
    // Not woken per op (that cost a context switch on every collective, ~10% at 1 MiB):
    // it looks at least twice per timeout, so a timeout is reported at most half a
    // timeout late.
    auto next = now + std::min<std::chrono::steady_clock::duration>(std::chrono::seconds(1), options().timeout / 2);
    if (broken_) {
      if (abort_at_ == std::chrono::steady_clock::time_point{}) {
        abort_at_ = now + std::chrono::milliseconds(abort_grace_ms());
      }
      if (now >= abort_at_) {
        log::error("rank {}: ending the job after a timed-out collective", rank());
        MpiEnvironment::abort_job(3);
      }
      next = std::min(next, abort_at_);
    }
    for (Lane* lane : {&collectives_, &p2p_}) {
      bool expired = false;
      {
        std::lock_guard<std::mutex> lane_lock(lane->mutex);
        if (lane->in_flight) {
          if (now >= lane->deadline)
            expired = true;
          else
            next = std::min(next, lane->deadline);
        }
      }
      if (expired) {
        fail_timed_out(*lane);
        next = now;  // re-evaluate at once: start the grace period
      }
    }
    watchdog_cv_.wait_until(lock, next);
    // Woken long after it asked to be: this process was not running (stopped, starved of
    // CPU). A timeout it reports next is then no proof that it waited: the dump says so.
    probes::FlightRecorder::note_stall(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - next).count());
  }
}

// ---- collectives ----

std::shared_ptr<Work> ProcessGroupMPI::allreduce(const Tensor& tensor, const AllreduceOptions& opts) {
  check_cpu(tensor, "allreduce");
  DDPSCOPE_CHECK(opts.op != ReduceOp::Avg || is_floating(tensor.dtype()), "allreduce: avg needs a floating dtype, got ",
                 tensor.describe());
  const int n = size();
  const MPI_Comm comm = comm_.get();
  const MPI_Comm ring = ring_applies(opts.op, tensor.dtype()) ? ring_comm_.get() : MPI_COMM_NULL;
  std::vector<char>* scratch = &ring_scratch_;  // only the collectives lane uses it
  return enqueue_collective(OpType::Allreduce, tensor, reduce_op_name(opts.op), {tensor}, opts.timeout, [=] {
    if (ring != MPI_COMM_NULL) {
      ring_sum(tensor.raw_data(), tensor.numel(), tensor.dtype(), ring, *scratch);
      if (opts.op == ReduceOp::Avg) divide_in_place(tensor, n);
      tensor.bump_version();
      return;
    }
    const MPI_Datatype type = mpi_datatype(tensor.dtype());
    const MPI_Op op = mpi_reduce_op(opts.op, tensor.dtype());
    const size_t elem = element_size(tensor.dtype());
    char* base = static_cast<char*>(tensor.raw_data());
    for (int64_t done = 0; done < tensor.numel(); done += kMaxChunk) {
      const int count = static_cast<int>(std::min(kMaxChunk, tensor.numel() - done));
      MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, base + done * elem, count, type, op, comm));
    }
    if (opts.op == ReduceOp::Avg) divide_in_place(tensor, n);
    tensor.bump_version();
  });
}

std::shared_ptr<Work> ProcessGroupMPI::allreduce_coalesced(const std::vector<Tensor>& tensors,
                                                           const AllreduceOptions& opts) {
  DDPSCOPE_CHECK(!tensors.empty(), "allreduce_coalesced: no tensors given");
  for (const Tensor& t : tensors) {
    check_cpu(t, "allreduce_coalesced");
    DDPSCOPE_CHECK(t.dtype() == tensors.front().dtype(), "allreduce_coalesced: dtypes differ (",
                   tensors.front().describe(), " and ", t.describe(), "); coalesce one dtype at a time");
  }
  DDPSCOPE_CHECK(opts.op != ReduceOp::Avg || is_floating(tensors.front().dtype()),
                 "allreduce_coalesced: avg needs a floating dtype");
  int64_t total = 0;
  for (const Tensor& t : tensors)
    total += t.numel();
  const Tensor described = Tensor::empty({total}, tensors.front().dtype());
  const int n = size();
  const MPI_Comm comm = comm_.get();
  const MPI_Comm ring = ring_applies(opts.op, tensors.front().dtype()) ? ring_comm_.get() : MPI_COMM_NULL;
  std::vector<char>* scratch = &ring_scratch_;  // only the collectives lane uses it
  return enqueue_collective(
      OpType::AllreduceCoalesced, described, detail::concat(reduce_op_name(opts.op), ", ", tensors.size(), " tensors"),
      tensors, opts.timeout, [=] {
        Tensor flat = flatten_into(tensors);
        if (ring != MPI_COMM_NULL) {
          ring_sum(flat.raw_data(), flat.numel(), flat.dtype(), ring, *scratch);
        } else {
          MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, flat.raw_data(), int_count(flat.numel(), "allreduce_coalesced"),
                                  mpi_datatype(flat.dtype()), mpi_reduce_op(opts.op, flat.dtype()), comm));
        }
        if (opts.op == ReduceOp::Avg) divide_in_place(flat, n);
        unflatten_from(flat, tensors);
      });
}

std::shared_ptr<Work> ProcessGroupMPI::broadcast(const Tensor& tensor, const BroadcastOptions& opts) {
  check_cpu(tensor, "broadcast");
  check_rank(opts.root, "broadcast");
  const MPI_Comm comm = comm_.get();
  return enqueue_collective(
      OpType::Broadcast, tensor, detail::concat("root ", opts.root), {tensor}, opts.timeout,
      [=] {
        const size_t elem = element_size(tensor.dtype());
        char* base = static_cast<char*>(tensor.raw_data());
        for (int64_t done = 0; done < tensor.numel(); done += kMaxChunk) {
          const int count = static_cast<int>(std::min(kMaxChunk, tensor.numel() - done));
          MPI_CHECK(MPI_Bcast(base + done * elem, count, mpi_datatype(tensor.dtype()), opts.root, comm));
        }
        tensor.bump_version();
      },
      opts.root);
}

std::shared_ptr<Work> ProcessGroupMPI::broadcast_coalesced(const std::vector<Tensor>& tensors,
                                                           const std::vector<int>& roots,
                                                           const CollectiveOptions& opts) {
  check_roots(tensors, roots, "broadcast_coalesced");
  for (const Tensor& t : tensors)
    check_cpu(t, "broadcast_coalesced");
  int64_t total = 0;
  for (const Tensor& t : tensors)
    total += t.numel();
  const MPI_Comm comm = comm_.get();
  return enqueue_collective(
      OpType::BroadcastCoalesced, Tensor::empty({total}, tensors.front().dtype()),
      detail::concat(tensors.size(), " tensors"), tensors, opts.timeout, [=] {
        // All in flight at once: with two ranks each sending half, both directions move
        // together (6 x 4 MiB, roots alternating: 1.45 ms one by one, 1.0 ms at once).
        std::vector<MPI_Request> requests;
        for (size_t i = 0; i < tensors.size(); ++i) {
          const size_t elem = element_size(tensors[i].dtype());
          char* base = static_cast<char*>(tensors[i].raw_data());
          for (int64_t done = 0; done < tensors[i].numel(); done += kMaxChunk) {
            const int count = static_cast<int>(std::min(kMaxChunk, tensors[i].numel() - done));
            MPI_CHECK(MPI_Ibcast(base + done * elem, count, mpi_datatype(tensors[i].dtype()), roots[i], comm,
                                 &requests.emplace_back()));
          }
        }
        MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
        for (const Tensor& t : tensors)
          t.bump_version();
      });
}

std::shared_ptr<Work> ProcessGroupMPI::allgather(const std::vector<Tensor>& outputs, const Tensor& input,
                                                 const CollectiveOptions& opts) {
  check_cpu(input, "allgather");
  check_list(outputs, input, "allgather", "outputs");
  const MPI_Comm comm = comm_.get();
  const int n = size();
  return enqueue_collective(OpType::Allgather, input, "", outputs, opts.timeout, [=] {
    const int count = int_count(input.numel(), "allgather");
    Tensor gathered = Tensor::empty({int64_t{n} * input.numel()}, input.dtype());
    const MPI_Datatype type = mpi_datatype(input.dtype());
    MPI_CHECK(MPI_Allgather(input.raw_data(), count, type, gathered.raw_data(), count, type, comm));
    unflatten_from(gathered, outputs);
  });
}

std::shared_ptr<Work> ProcessGroupMPI::reduce_scatter(const Tensor& output, const std::vector<Tensor>& inputs,
                                                      const ReduceScatterOptions& opts) {
  check_cpu(output, "reduce_scatter");
  check_list(inputs, output, "reduce_scatter", "inputs");
  DDPSCOPE_CHECK(opts.op != ReduceOp::Avg || is_floating(output.dtype()), "reduce_scatter: avg needs a floating dtype");
  const MPI_Comm comm = comm_.get();
  const int n = size();
  return enqueue_collective(OpType::ReduceScatter, output, reduce_op_name(opts.op), {output}, opts.timeout, [=] {
    Tensor flat = flatten_into(inputs);
    MPI_CHECK(MPI_Reduce_scatter_block(flat.raw_data(), output.raw_data(), int_count(output.numel(), "reduce_scatter"),
                                       mpi_datatype(output.dtype()), mpi_reduce_op(opts.op, output.dtype()), comm));
    if (opts.op == ReduceOp::Avg) divide_in_place(output, n);
    output.bump_version();
  });
}

std::shared_ptr<Work> ProcessGroupMPI::alltoall(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                                const CollectiveOptions& opts) {
  DDPSCOPE_CHECK(!inputs.empty(), "alltoall: no input tensors given");
  check_cpu(inputs.front(), "alltoall");
  check_list(inputs, inputs.front(), "alltoall", "inputs");
  check_list(outputs, inputs.front(), "alltoall", "outputs");
  const MPI_Comm comm = comm_.get();
  return enqueue_collective(OpType::Alltoall, inputs.front(), "", outputs, opts.timeout, [=] {
    Tensor send = flatten_into(inputs);
    Tensor received = Tensor::empty(send.sizes(), send.dtype());
    const int count = int_count(inputs.front().numel(), "alltoall");
    const MPI_Datatype type = mpi_datatype(send.dtype());
    MPI_CHECK(MPI_Alltoall(send.raw_data(), count, type, received.raw_data(), count, type, comm));
    unflatten_from(received, outputs);
  });
}

std::shared_ptr<Work> ProcessGroupMPI::barrier(const CollectiveOptions& opts) {
  const MPI_Comm comm = comm_.get();
  return enqueue_collective(OpType::Barrier, Tensor(), "", {}, opts.timeout, [=] { MPI_CHECK(MPI_Barrier(comm)); });
}

// ---- point to point ----

std::shared_ptr<Work> ProcessGroupMPI::enqueue_p2p(OpType type, const Tensor& tensor, int peer, int tag, bool is_send) {
  const char* name = op_type_name(type);
  check_usable(name);
  check_cpu(tensor, name);
  check_rank(peer, name);
  DDPSCOPE_CHECK(peer != rank(), name, ": rank ", peer, " is this rank; send to another rank");
  DDPSCOPE_CHECK(tag >= 0, name, ": tag must be >= 0, got ", tag);
  const uint64_t seq = next_p2p_seq_++;
  const Milliseconds limit = options().timeout;
  auto work = std::make_shared<Work>(
      type, seq, describe(type, seq, tensor, detail::concat(is_send ? "to rank " : "from rank ", peer, ", tag ", tag)),
      std::vector<Tensor>{tensor}, limit, rank());
  // Posted now, on this thread: a send and a recv issued in either order cannot deadlock.
  auto request = std::make_shared<MPI_Request>();
  const int count = int_count(tensor.numel(), name);
  if (is_send) {
    MPI_CHECK(MPI_Isend(tensor.raw_data(), count, mpi_datatype(tensor.dtype()), peer, tag, comm_.get(), request.get()));
  } else {
    MPI_CHECK(MPI_Irecv(tensor.raw_data(), count, mpi_datatype(tensor.dtype()), peer, tag, comm_.get(), request.get()));
  }
  const int64_t record_id = record_scheduled(type, -1, static_cast<int64_t>(seq), {tensor}, {}, kUseGroupTimeout, peer);
  push(p2p_, {work,
              [request, tensor, is_send] {
                wait_all_backing_off(std::span<MPI_Request>(request.get(), 1));
                if (!is_send) tensor.bump_version();
              },
              limit, Fingerprint{},
              detail::concat("rank ", peer, is_send ? " to receive it" : " to send it", " (tag ", tag, ")"),
              static_cast<int64_t>(tensor.nbytes()), peer, record_id});
  return work;
}

std::shared_ptr<Work> ProcessGroupMPI::send(const Tensor& tensor, int dst, int tag) {
  return enqueue_p2p(OpType::Send, tensor, dst, tag, true);
}

std::shared_ptr<Work> ProcessGroupMPI::recv(const Tensor& tensor, int src, int tag) {
  return enqueue_p2p(OpType::Recv, tensor, src, tag, false);
}

std::shared_ptr<ProcessGroup> ProcessGroupMPI::new_group(const std::vector<int>& ranks) {
  check_subgroup_ranks(ranks);
  const auto it = std::find(ranks.begin(), ranks.end(), rank());
  const bool member = it != ranks.end();
  const int key = member ? static_cast<int>(it - ranks.begin()) : 0;
  auto created = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
  const MPI_Comm comm = comm_.get();
  // MPI_Comm_split is a collective on this group's communicator, so it runs in order
  // with the other collectives on the worker.
  enqueue_collective(OpType::NewGroup, Tensor(), detail::concat(ranks.size(), " ranks"), {}, kUseGroupTimeout, [=] {
    MPI_CHECK(MPI_Comm_split(comm, member ? 0 : MPI_UNDEFINED, key, created.get()));
  })->wait();
  if (!member) return nullptr;
  return std::make_shared<ProcessGroupMPI>(MpiComm(*created), subgroup_options(ranks));
}

}  // namespace ddpscope::c10d
