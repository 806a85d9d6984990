#include "ring_allreduce.h"

#include <algorithm>

#include "mpi_environment.h"
#include "probe.h"

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
    // A transfer, polled at full speed: a sleep between polls would slow a link's stream.
    // (Ring groups span hosts, where no barrier waits for late ranks first: a late rank is
    // waited for here too.)
    MPI_CHECK(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
    requests.clear();
  }
}

// One step on this rank as a ring_step span (probes/runtime/event.h): which block went to the
// right neighbour and which came from the left, so the ring can be replayed and taught.
void record_step(const char* phase_name, int64_t t_begin, int64_t seq, int step, int send_block, int recv_block,
                 int right, int64_t bytes) {
  if (!probes::enabled()) return;
  static constexpr probes::SourceLocation kReduceScatter{"ring reduce-scatter", __FILE__, __LINE__};
  static constexpr probes::SourceLocation kAllGather{"ring all-gather", __FILE__, __LINE__};
  probes::record(probes::Kind::RingStep, phase_name[0] == 'r' ? &kReduceScatter : &kAllGather, t_begin,
                 probes::now_ns(),
                 {.param = send_block,
                  .bucket = static_cast<int16_t>(recv_block),
                  .peer = static_cast<int16_t>(right),
                  .bytes = bytes,
                  .id = seq,
                  .id2 = step});
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
    const int64_t t0 = probes::enabled() ? probes::now_ns() : 0;
    exchange(data + begin(send_block), length(send_block), right, incoming, length(recv_block), left, comm, options);
    T* into = data + begin(recv_block);
    for (int64_t i = 0; i < length(recv_block); ++i)
      into[i] += incoming[i];
    record_step("reduce-scatter", t0, options.seq, s, send_block, recv_block, right,
                length(send_block) * static_cast<int64_t>(sizeof(T)));
  }
  // Allgather: rank holds the whole sum of block (rank + 1); pass the sums around.
  for (int s = 0; s < n - 1; ++s) {
    const int send_block = (rank + 1 - s + 2 * n) % n, recv_block = (rank - s + 2 * n) % n;
    const int64_t t0 = probes::enabled() ? probes::now_ns() : 0;
    exchange(data + begin(send_block), length(send_block), right, data + begin(recv_block), length(recv_block), left,
             comm, options);
    record_step("all-gather", t0, options.seq, n - 1 + s, send_block, recv_block, right,
                length(send_block) * static_cast<int64_t>(sizeof(T)));
  }
}

template void ring_allreduce_sum<float>(float*, int64_t, MPI_Comm, std::vector<char>&, const RingOptions&);
template void ring_allreduce_sum<double>(double*, int64_t, MPI_Comm, std::vector<char>&, const RingOptions&);

}  // namespace ddpscope::c10d
