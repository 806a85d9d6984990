// The fixed-size event record that probes write on the hot path, and the kinds of
// event the run store knows. A record points at its call site's SourceLocation (static:
// built by the probe macros, or interned for names made at run time), so it holds one
// pointer and copying it never allocates.
#pragma once

#include <cstdint>

namespace ddpscope::probes {

// Event::flags bit, stored in the run file: the span ended because an exception unwound
// its scope (a collective's timeout, a refused step). What it measured did not complete,
// so analyses leave it out and the timeline draws it as cut short.
inline constexpr uint8_t kEndedByError = 2;

// Stored as integers in the run file (table `kinds` maps them to names): append new
// kinds at the end, never renumber.
enum class Kind : uint8_t {
  Iteration = 0,
  Forward = 1,
  Backward = 2,
  Optimizer = 3,
  AutogradNode = 4,
  GradReady = 5,    // instant: a parameter's gradient is accumulated (param)
  BucketCopy = 6,   // a gradient copied into its bucket (param, bucket)
  BucketReady = 7,  // instant: every gradient of a bucket arrived (bucket)
  Allreduce = 8,    // a bucket's reduction, launch -> completion (bucket, bytes, seq)
  CommHook = 9,     // a comm hook's call (bucket)
  Finalize = 10,    // end of backward: waiting for buckets, writing gradients back
  PgOp = 11,        // a process-group op as its backend ran it (bytes, seq, peer)
  Barrier = 12,
  RpcSend = 13,  // distributed autograd: ctx_id = id, msg_id = id2, peer
  RpcRecv = 14,
  DistBackward = 15,
  Mark = 16,  // any other instant
  // instant: a process-group op started on its backend (bytes, seq, peer); one with no
  // PgOp span of the same name and seq after it is still running (the hang view).
  PgOpStart = 17,
  // a remote function running on its callee (msg_id = the request's, peer = caller)
  RpcCall = 18,
  // instant: an RRef created, forked, confirmed or deleted (rref_id, fork_id; peer)
  RRef = 19,
  // instant: a distributed autograd context created or released here (ctx_id)
  DistContext = 20,
  // instant: a send or recv function recorded (ctx_id, msg_id = its autograd message id,
  // peer = the worker holding the other end)
  DistFunction = 21,
  // instant: in a distributed pass, a gradient reached a node and its dependency count
  // fell (ctx_id = id, seq = id2: the node's sequence number, param = the count left; 0
  // means the node is ready). Recorded for the passes whose graph is recorded.
  Dependency = 22,
  // Imported from a PyTorch profiler trace (schema 5; torch_trace_import.h). GPU work is
  // on the thread of its device and stream; a launch and its kernel share msg_id (the
  // trace's correlation id). HTA's kernel classes: communication (NCCL), memory (copies
  // and sets), computation (every other kernel).
  GpuKernel = 23,    // a computation kernel
  GpuComm = 24,      // a communication kernel (name ^nccl or ncclKernel)
  GpuMemcpy = 25,    // bytes
  GpuMemset = 26,    // bytes
  CudaRuntime = 27,  // a CUDA runtime or driver call on a CPU thread (cudaLaunchKernel, ...)
  CpuOp = 28,        // any other operator or annotation of the trace (aten::mm, ...)
  // ZeRO (schema 7): after the shard steps, the updated parameters broadcast from their
  // owners (bytes: all of them), the post-step communication plain DDP does not have.
  ParamSync = 29,
  // A ring allreduce's step on one rank (schema 9; engine/c10d/ring_allreduce.h): it sent
  // one block to the next rank and received another from the previous one (seq = the
  // allreduce's sequence number, msg_id = the step, 0 .. 2n-3: reduce-scatter, then
  // all-gather; param = the block sent, bucket = the block received, peer = the rank sent
  // to, bytes = the bytes sent). The Learn tab's ring lesson replays them.
  RingStep = 30,
  // One timed exchange of `train --measure-links` (schema 15; engine/apps/link_test.h), on
  // the sender: bytes to peer and its answer back (param = the exchange's number).
  LinkTest = 31,
  // instant (schema 16): the collective this rank's failure ended, typed so that no reader
  // decides from an error's words: name = the op ("allreduce", "broadcast (group g)"), seq =
  // its number in its group, param = 1 when its wait ran out of time, 0 when it failed
  // otherwise (a peer gone). A PyTorch rank's probe writes it; the engine's ranks type their
  // failure in their error event instead (the run's failed_op).
  CollectiveFailed = 32,
};
inline constexpr int kNumKinds = 33;

const char* kind_name(Kind kind);

// The detail kinds: the many short spans inside a step (autograd nodes, gradient ticks,
// copies into buckets, dependency counts, a trace's operators, launches and kernels),
// nine in ten spans of a DDP run. The writer packs them apart from the others (the
// structure: iterations, phases, collectives, messages, marks), so a reader that wants
// the structure of a run of 100M spans decodes a tenth of them (kinds bit mask).
inline constexpr uint64_t kDetailKindMask =
    (uint64_t{1} << static_cast<int>(Kind::AutogradNode)) | (uint64_t{1} << static_cast<int>(Kind::GradReady)) |
    (uint64_t{1} << static_cast<int>(Kind::BucketCopy)) | (uint64_t{1} << static_cast<int>(Kind::Dependency)) |
    (uint64_t{1} << static_cast<int>(Kind::GpuKernel)) | (uint64_t{1} << static_cast<int>(Kind::GpuMemcpy)) |
    (uint64_t{1} << static_cast<int>(Kind::GpuMemset)) | (uint64_t{1} << static_cast<int>(Kind::CudaRuntime)) |
    (uint64_t{1} << static_cast<int>(Kind::CpuOp));
inline bool is_detail_kind(uint8_t kind) { return kind < 64 && ((kDetailKindMask >> kind) & 1); }

// What an rpc_send / rpc_recv span carries in EventArgs::param: the kind of RPC message
// (the RPC wire format uses the same codes). The run file's `messages.kind` names them.
enum class RpcMessageKind : uint8_t {
  Call = 1,
  Response = 2,
  Error = 3,
  RemoteCall = 4,
  RRefFetch = 5,
  RRefUserDelete = 6,
  RRefForkRequest = 7,
  RRefChildAccept = 8,
  Ack = 9,
};
const char* rpc_message_kind_name(int kind);

// Where an event was recorded and what it is called; static storage duration.
struct SourceLocation {
  const char* name;
  const char* file;
  uint32_t line;
};

// Optional arguments of an event; -1 means "not set".
struct EventArgs {
  int32_t iteration = -1;
  int32_t param = -1;
  int16_t bucket = -1;
  int16_t peer = -1;
  int64_t bytes = -1;
  int64_t id = -1;   // PgOp/Allreduce: sequence number; rpc kinds: context id; RRef: rref id
  int64_t id2 = -1;  // rpc kinds: message id; RRef: fork id
};

// One span (t_end_ns > t_begin_ns) or instant (t_end_ns == t_begin_ns). Times are
// CLOCK_MONOTONIC nanoseconds of the recording process.
struct Event {
  int64_t t_begin_ns;
  int64_t t_end_ns;
  const SourceLocation* where;
  int64_t bytes;
  int64_t id;
  int64_t id2;
  int32_t iteration;
  int32_t param;
  int16_t bucket;
  int16_t peer;
  Kind kind;
  uint8_t flags;
  uint16_t reserved;
};
static_assert(sizeof(Event) == 64, "an event is one cache line");

}  // namespace ddpscope::probes
