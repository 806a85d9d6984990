#include "mpi_environment.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "ring_allreduce.h"
#include "ddpscope/error.h"

namespace ddpscope::c10d {
namespace {

std::atomic<bool> g_abandoned{false};
std::once_flag g_init_once;

// Reduce functions for 16-bit floats: computed in float, stored back rounded.
template <float (*Load)(uint16_t), uint16_t (*Store)(float), typename Combine>
void reduce16(void* in, void* inout, int* len, Combine combine) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i)
    b[i] = Store(combine(Load(a[i]), Load(b[i])));
}

float load_half(uint16_t h) { return half_bits_to_float(h); }
uint16_t store_half(float f) { return float_to_half_bits(f); }
float load_bf16(uint16_t h) { return bf16_bits_to_float(h); }
uint16_t store_bf16(float f) { return float_to_bf16_bits(f); }

#define DDPSCOPE_MPI_OP16(NAME, LOAD, STORE, EXPR)                                \
  void NAME(void* in, void* inout, int* len, MPI_Datatype*) {                     \
    reduce16<LOAD, STORE>(in, inout, len, [](float x, float y) { return EXPR; }); \
  }
DDPSCOPE_MPI_OP16(half_sum, load_half, store_half, x + y)
DDPSCOPE_MPI_OP16(half_min, load_half, store_half, x < y ? x : y)
DDPSCOPE_MPI_OP16(half_max, load_half, store_half, x > y ? x : y)
DDPSCOPE_MPI_OP16(half_prod, load_half, store_half, x* y)
DDPSCOPE_MPI_OP16(bf16_sum, load_bf16, store_bf16, x + y)
DDPSCOPE_MPI_OP16(bf16_min, load_bf16, store_bf16, x < y ? x : y)
DDPSCOPE_MPI_OP16(bf16_max, load_bf16, store_bf16, x > y ? x : y)
DDPSCOPE_MPI_OP16(bf16_prod, load_bf16, store_bf16, x* y)
#undef DDPSCOPE_MPI_OP16

// [dtype f16=0 / bf16=1][Sum, Min, Max, Product]
MPI_Op g_ops16[2][4];

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (g_abandoned) {
    // A thread is still blocked inside MPI: finalising would hang. End the job instead.
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  MPI_Finalize();
}

void initialize() {
  int already = 0;
  MPI_Initialized(&already);
  int provided = 0;
  if (!already) {
    // The group's worker thread waits inside MPI while this rank's compute threads
    // run: OpenMPI's progress loop spins by default and competes with them for a core.
    // Yielding while idle lets them run (2 ranks on 2 cores: allreduce at 4 KiB 9.6-10.7
    // -> 7.7-8.4 us, 1-64 MiB and the DDP step unchanged within noise). A value the
    // user set is kept.
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
    // Over TCP OpenMPI sends a message beyond its eager limit (64 KiB) by rendezvous: a
    // first fragment, then the rest once the receiver's progress loop has answered. The
    // ring of ring_allreduce.h sends 256 KiB segments, so each paid a round trip that
    // waits for the other rank's comm thread to get a core, which compute on the same
    // cores delays. Sent eagerly, they flow without it. Measured on 2 simulated hosts at
    // 2 Gbit/s (8 x Linear(1024), 2 shared cores): DDP's first bucket (4.2 MB, beside
    // backward) 24-28 -> 18.5-23 ms, the step 136.6-140.4 -> 131.8-135.7 ms.
    const std::string eager = std::to_string(RingOptions{}.segment_bytes + (64 << 10));
    setenv("OMPI_MCA_btl_tcp_eager_limit", eager.c_str(), /*overwrite=*/0);
    setenv("OMPI_MCA_btl_tcp_max_send_size", eager.c_str(), /*overwrite=*/0);
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    std::atexit(finalize_at_exit);
    // Errors come back to the caller (MPI_CHECK), which names them; communicators
    // duplicated from the world inherit this.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  } else {
    MPI_Query_thread(&provided);
  }
  DDPSCOPE_CHECK(provided >= MPI_THREAD_MULTIPLE, "MPI granted thread level ", provided,
                 " but ddpscope needs MPI_THREAD_MULTIPLE; use an OpenMPI built with thread support");
  MPI_User_function* fns[2][4] = {{half_sum, half_min, half_max, half_prod}, {bf16_sum, bf16_min, bf16_max, bf16_prod}};
  for (int d = 0; d < 2; ++d) {
    for (int o = 0; o < 4; ++o)
      MPI_CHECK(MPI_Op_create(fns[d][o], 1, &g_ops16[d][o]));
  }
}

}  // namespace

std::string describe_mpi_error(int rc, const std::string& call_name, int rank) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  int error_class = rc;
  MPI_Error_class(rc, &error_class);
  std::string message =
      detail::concat(call_name, " failed", rank >= 0 ? " on rank " + std::to_string(rank) : "", ": ",
                     len > 0 ? std::string(text, static_cast<size_t>(len)) : "MPI error " + std::to_string(rc));
  if (error_class == MPI_ERR_TRUNCATE) {
    message +=
        "; the ranks called collectives of different sizes or in a different order. Rerun with "
        "DDPSCOPE_DEBUG=detail: each collective is then checked across ranks and a mismatch names both sides";
  }
  return message;
}

void throw_mpi_error(int rc, const char* call, const char* file, int line) {
  const std::string source(call);
  const std::string name = source.substr(0, source.find('('));
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw Error(describe_mpi_error(rc, name, rank), file, line);
}

void MpiEnvironment::ensure_initialized() { std::call_once(g_init_once, initialize); }

int MpiEnvironment::world_rank() {
  ensure_initialized();
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int MpiEnvironment::world_size() {
  ensure_initialized();
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::string MpiEnvironment::library_version() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  return std::string(v, static_cast<size_t>(len));
}

void MpiEnvironment::mark_abandoned() { g_abandoned = true; }

void MpiEnvironment::abort_job(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I64: return MPI_INT64_T;
    case DType::F16:
    case DType::BF16: return MPI_UINT16_T;
  }
  throw DDPSCOPE_ERROR("no MPI datatype for ", dtype_name(dtype));
}

MPI_Op mpi_reduce_op(ReduceOp op, DType dtype) {
  const int index = op == ReduceOp::Min ? 1 : op == ReduceOp::Max ? 2 : op == ReduceOp::Product ? 3 : 0;
  if (dtype == DType::F16) return g_ops16[0][index];
  if (dtype == DType::BF16) return g_ops16[1][index];
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return MPI_SUM;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Product: return MPI_PROD;
  }
  return MPI_SUM;
}

MpiComm::~MpiComm() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

MpiComm& MpiComm::operator=(MpiComm&& other) noexcept {
  if (this != &other) {
    MpiComm tmp(comm_);
    comm_ = other.comm_;
    other.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

}  // namespace ddpscope::c10d
