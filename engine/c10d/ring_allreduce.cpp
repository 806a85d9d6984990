#include "ring_allreduce.h"

#include <algorithm>

#include "mpi_environment.h"

namespace ddpscope::c10d {
namespace {

template <typename T>
MPI_Datatype datatype_of();
template <>
MPI_Datatype datatype_of<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype datatype_of<double>() {
  return MPI_DOUBLE;
}

// Sends `send_count` elements to `right` while receiving `recv_count` from `left`,
// segment by segment, up to `window` segments in flight each way. MPI keeps messages
// between one pair with one tag in order, so segments match by position.
template <typename T>
void exchange(const T* send, int64_t send_count, int right, T* recv, int64_t recv_count, int left, MPI_Comm comm,
              const RingOptions& options) {
  constexpr int kTag = 0x52494e47;  // "RING"
  const int64_t segment = std::max<int64_t>(1, options.segment_bytes / static_cast<int64_t>(sizeof(T)));
  std::vector<MPI_Request> requests;
  requests.reserve(static_cast<size_t>(2 * options.window));
  int64_t sent = 0, received = 0;
  while (sent < send_count || received < recv_count) {
    for (int w = 0; w < options.window && (sent < send_count || received < recv_count); ++w) {
      if (received < recv_count) {
        const int n = static_cast<int>(std::min(segment, recv_count - received));
        requests.emplace_back();
        MPI_CHECK(MPI_Irecv(recv + received, n, datatype_of<T>(), left, kTag, comm, &requests.back()));
        received += n;
      }
      if (sent < send_count) {
        const int n = static_cast<int>(std::min(segment, send_count - sent));
        requests.emplace_back();
        MPI_CHECK(MPI_Isend(send + sent, n, datatype_of<T>(), right, kTag, comm, &requests.back()));
        sent += n;
      }
    }
    MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
    requests.clear();
  }
}

}  // namespace

template <typename T>
void ring_allreduce_sum(T* data, int64_t numel, MPI_Comm comm, std::vector<char>& scratch, const RingOptions& options) {
  int rank = 0, n = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &n);
  if (n == 1 || numel == 0) return;
  const auto begin = [&](int block) { return numel * block / n; };
  const auto length = [&](int block) { return begin(block + 1) - begin(block); };
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  scratch.resize(static_cast<size_t>(length(n - 1) + 1) * sizeof(T));  // the largest block
  T* incoming = reinterpret_cast<T*>(scratch.data());
  // Reduce-scatter: after step s, block (rank - s - 1) holds the sum of s + 2 ranks.
  for (int s = 0; s < n - 1; ++s) {
    const int send_block = (rank - s + 2 * n) % n, recv_block = (rank - s - 1 + 2 * n) % n;
    exchange(data + begin(send_block), length(send_block), right, incoming, length(recv_block), left, comm, options);
    T* into = data + begin(recv_block);
    for (int64_t i = 0; i < length(recv_block); ++i)
      into[i] += incoming[i];
  }
  // Allgather: rank holds the whole sum of block (rank + 1); pass the sums around.
  for (int s = 0; s < n - 1; ++s) {
    const int send_block = (rank + 1 - s + 2 * n) % n, recv_block = (rank - s + 2 * n) % n;
    exchange(data + begin(send_block), length(send_block), right, data + begin(recv_block), length(recv_block), left,
             comm, options);
  }
}

template void ring_allreduce_sum<float>(float*, int64_t, MPI_Comm, std::vector<char>&, const RingOptions&);
template void ring_allreduce_sum<double>(double*, int64_t, MPI_Comm, std::vector<char>&, const RingOptions&);

}  // namespace ddpscope::c10d
