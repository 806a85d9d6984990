#include "mpi_wait.h"

#include <algorithm>
#include <thread>

#include "mpi_environment.h"

namespace ddpscope::c10d {

void wait_all_backing_off(std::span<MPI_Request> requests, const PollBackoff& backoff) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  while (true) {
    int done = 0;
    MPI_CHECK(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) return;
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
    if (waited < backoff.spin) continue;
    std::this_thread::sleep_for(std::clamp(waited / backoff.share, backoff.min_sleep, backoff.max_sleep));
  }
}

void wait_for_every_rank(MPI_Comm comm, const PollBackoff& backoff) {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_CHECK(MPI_Ibarrier(comm, &request));
  wait_all_backing_off(std::span<MPI_Request>(&request, 1), backoff);
}

}  // namespace ddpscope::c10d
