#include "host_arrival_board.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "mpi_environment.h"

namespace ddpscope::c10d {

namespace {

constexpr size_t kBoardBytes = 64;  // one cache line: the counter
constexpr size_t kNameBytes = 64;

void* map_board(const char* name, bool create) {
  const int fd = shm_open(name, create ? O_CREAT | O_EXCL | O_RDWR : O_RDWR, 0600);
  if (fd < 0) return nullptr;
  if (create && ftruncate(fd, kBoardBytes) != 0) {
    close(fd);
    shm_unlink(name);
    return nullptr;
  }
  void* mapping = mmap(nullptr, kBoardBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  return mapping == MAP_FAILED ? nullptr : mapping;
}

// Sleeps while *word == expected (shared between processes: not FUTEX_PRIVATE), at most
// `timeout`; a wake, a changed word or the timeout all return.
void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::milliseconds timeout) {
  timespec limit{static_cast<time_t>(timeout.count() / 1000), static_cast<long>(timeout.count() % 1000) * 1000000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &limit, nullptr, 0);
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// The counter wraps after 2^32 arrivals: compare by the signed difference.
bool reached(uint32_t count, uint32_t target) { return static_cast<int32_t>(count - target) >= 0; }

}  // namespace

bool every_rank_on_this_host(MPI_Comm comm) {
  MPI_Comm local;
  MPI_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
  int local_size = 0, size = 0;
  MPI_Comm_size(local, &local_size);
  MPI_Comm_size(comm, &size);
  MPI_Comm_free(&local);
  int shared = local_size == size ? 1 : 0;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MIN, comm));
  return shared != 0;
}

std::unique_ptr<HostArrivalBoard> HostArrivalBoard::create(MPI_Comm comm, bool wanted) {
  int every_rank_wants = wanted ? 1 : 0;  // one rank's "no" is every rank's: it is collective
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &every_rank_wants, 1, MPI_INT, MPI_MIN, comm));
  if (!every_rank_wants || !every_rank_on_this_host(comm)) return nullptr;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char name[kNameBytes] = {};
  void* mapping = nullptr;
  if (rank == 0) {
    static std::atomic<int> boards{0};
    std::snprintf(name, sizeof name, "/ddpscope-arrivals-%d-%d", static_cast<int>(getpid()), boards++);
    mapping = map_board(name, /*create=*/true);
    if (!mapping) name[0] = '\0';
  }
  MPI_CHECK(MPI_Bcast(name, kNameBytes, MPI_CHAR, 0, comm));
  if (rank != 0 && name[0] != '\0') mapping = map_board(name, /*create=*/false);
  int mapped = mapping ? 1 : 0;
  // Every rank has it mapped (or knows that one could not) before its name goes.
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &mapped, 1, MPI_INT, MPI_MIN, comm));
  if (rank == 0 && name[0] != '\0') shm_unlink(name);
  if (!mapped) {
    if (mapping) munmap(mapping, kBoardBytes);
    return nullptr;
  }
  return std::unique_ptr<HostArrivalBoard>(new HostArrivalBoard(mapping, size));
}

HostArrivalBoard::~HostArrivalBoard() { munmap(mapping_, kBoardBytes); }

void HostArrivalBoard::arrive_and_wait() {
  target_ += static_cast<uint32_t>(size_);
  const uint32_t after = arrivals().fetch_add(1, std::memory_order_acq_rel) + 1;
  if (after == target_) {
    futex_wake_all(arrivals());  // the last one: the others sleep on the counter
    return;
  }
  // Ranks that arrive within microseconds of each other (back-to-back buckets) are met
  // without a sleep; later ones sleep until woken (the futex's timeout is only a safety net
  // against a lost wake).
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
  while (true) {
    const uint32_t now = arrivals().load(std::memory_order_acquire);
    if (reached(now, target_)) return;
    if (std::chrono::steady_clock::now() < spin_until) continue;
    futex_wait(arrivals(), now, std::chrono::milliseconds(100));
  }
}

}  // namespace ddpscope::c10d
