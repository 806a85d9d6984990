// The MPI runtime as this process uses it: initialised once with MPI_THREAD_MULTIPLE,
// datatypes and reduce ops for our dtypes (f16 and bf16 get user-defined ops), and an
// RAII owner for communicators. Finalised at exit unless a collective was abandoned
// (then the job ends through MPI_Abort instead, since finalising would hang).
#pragma once

#include <mpi.h>

#include <string>

#include "tensor/dtype.h"
#include "types.h"

// MPI calls return their errors (MPI_ERRORS_RETURN is set at initialisation): a failed
// call throws, naming the call, the rank and what the error usually means, and the rank
// reports it like any other failure. Open MPI's own fatal report goes through its
// launcher and is sometimes lost (seen: "Data unpack would read past end of buffer").
#define MPI_CHECK(expr)                                                                        \
  do {                                                                                         \
    const int rc_ = (expr);                                                                    \
    if (rc_ != MPI_SUCCESS) ::ddpscope::c10d::throw_mpi_error(rc_, #expr, __FILE__, __LINE__); \
  } while (0)

namespace ddpscope::c10d {

// Throws the error of an MPI call that returned `rc`; `call` is its source text.
[[noreturn]] void throw_mpi_error(int rc, const char* call, const char* file, int line);
// "MPI_Allreduce failed on rank 0: MPI_ERR_TRUNCATE: message truncated; the ranks ..."
std::string describe_mpi_error(int rc, const std::string& call_name, int rank);

class MpiEnvironment {
 public:
  // Initialises MPI on first use; throws if MPI_THREAD_MULTIPLE is not granted.
  static void ensure_initialized();
  static int world_rank();
  static int world_size();
  static std::string library_version();
  // Marks that a collective was abandoned: MPI_Finalize must not run.
  static void mark_abandoned();
  // Ends the whole job (all ranks) with `code`.
  [[noreturn]] static void abort_job(int code);
};

MPI_Datatype mpi_datatype(DType dtype);
MPI_Op mpi_reduce_op(ReduceOp op, DType dtype);  // Avg maps to Sum (divided afterwards)

// Move-only owner of a communicator (MPI_Comm_free on destruction).
class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {}
  ~MpiComm();
  MpiComm(MpiComm&& other) noexcept : comm_(other.comm_) { other.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& other) noexcept;
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;
  MPI_Comm get() const { return comm_; }
  // Keeps the handle alive (not freed): for communicators a blocked op still uses.
  void leak() { comm_ = MPI_COMM_NULL; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace ddpscope::c10d
