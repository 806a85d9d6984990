// The machine's floor for RPC (issue 54): what two processes on this host can do with no
// library in between, written here in the benchmark itself.
//   - raw TCP: a blocking ping-pong over loopback (TCP_NODELAY, one write and reads until
//     the message is whole, each way), and the one-way rate of a stream of 1 MiB messages;
//   - shared memory: the same ping-pong through a region both processes map, one slot each
//     way, the receiver spinning for a while and then sleeping on a futex.
// Prints one JSON object: for each payload, the median round trip in us of each, and the
// raw TCP one-way rate at 1 MiB in MB/s.
//   bench_rpc_floor [CALLS]
// Between two hosts (run_rpc_link.sh), the raw TCP ping-pong's two ends, run apart:
//   bench_rpc_floor --echo-server PORT BYTES CALLS
//   bench_rpc_floor --echo-client HOST PORT BYTES CALLS   (prints round_trip_us, one JSON line)
#include <arpa/inet.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPayloads[] = {8, 4096, 1 << 20};
constexpr int kWarmup = 50;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w <= 0) std::exit(3);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) std::exit(3);
    p += r;
    n -= static_cast<size_t>(r);
  }
}

// A connected pair of loopback TCP sockets, the second for the child.
std::pair<int, int> tcp_pair() {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(a);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(listener, 1) != 0) std::exit(3);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &length);
  const int client = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) std::exit(3);
  const int server = ::accept(listener, nullptr, nullptr);
  ::close(listener);
  const int one = 1;
  for (int fd : {client, server})
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return {client, server};
}

// Median round trip of `bytes` each way over raw TCP.
double tcp_round_trip_us(size_t bytes, int calls) {
  const auto [mine, theirs] = tcp_pair();
  std::vector<char> buffer(bytes, 'x');
  if (::fork() == 0) {  // the echo side
    ::close(mine);
    for (int i = 0; i < kWarmup + calls; ++i) {
      read_all(theirs, buffer.data(), bytes);
      write_all(theirs, buffer.data(), bytes);
    }
    std::_Exit(0);
  }
  ::close(theirs);
  std::vector<double> us;
  for (int i = 0; i < kWarmup + calls; ++i) {
    const auto t0 = Clock::now();
    write_all(mine, buffer.data(), bytes);
    read_all(mine, buffer.data(), bytes);
    if (i >= kWarmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::close(mine);
  ::wait(nullptr);
  return median(us);
}

// One-way rate of a stream of `bytes`-byte messages over raw TCP, in MB/s.
double tcp_one_way_mb_s(size_t bytes, int messages) {
  const auto [mine, theirs] = tcp_pair();
  std::vector<char> buffer(bytes, 'x');
  if (::fork() == 0) {
    ::close(mine);
    for (int i = 0; i < messages; ++i)
      read_all(theirs, buffer.data(), bytes);
    write_all(theirs, buffer.data(), 1);  // all arrived
    std::_Exit(0);
  }
  ::close(theirs);
  const auto t0 = Clock::now();
  for (int i = 0; i < messages; ++i)
    write_all(mine, buffer.data(), bytes);
  read_all(mine, buffer.data(), 1);
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(mine);
  ::wait(nullptr);
  return static_cast<double>(bytes) * messages / s / 1e6;
}

// One direction of the shared-memory ping-pong: a sequence number, and the bytes.
struct Slot {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> sleeping{0};
  alignas(64) char data[1];
};

void futex(std::atomic<uint32_t>* word, int op, uint32_t value) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, nullptr, nullptr, 0);
}

void post(Slot* s, const char* bytes, size_t n, uint32_t seq) {
  std::memcpy(s->data, bytes, n);
  s->seq.store(seq, std::memory_order_release);
  if (s->sleeping.load(std::memory_order_seq_cst)) futex(&s->seq, FUTEX_WAKE, 1);
}

// Waits until `s` holds message `seq`: spins 50 us, then sleeps on the futex.
void await(Slot* s, char* bytes, size_t n, uint32_t seq) {
  const auto spin_until = Clock::now() + std::chrono::microseconds(50);
  while (s->seq.load(std::memory_order_acquire) != seq) {
    if (Clock::now() < spin_until) continue;
    s->sleeping.store(1, std::memory_order_seq_cst);
    if (s->seq.load(std::memory_order_seq_cst) != seq) futex(&s->seq, FUTEX_WAIT, s->seq.load());
    s->sleeping.store(0, std::memory_order_relaxed);
  }
  std::memcpy(bytes, s->data, n);
}

double shm_round_trip_us(size_t bytes, int calls) {
  const size_t slot_bytes = (sizeof(Slot) + bytes + 63) / 64 * 64;
  void* region = ::mmap(nullptr, 2 * slot_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) std::exit(3);
  auto* to_child = new (region) Slot;
  auto* to_parent = new (static_cast<char*>(region) + slot_bytes) Slot;
  std::vector<char> buffer(bytes, 'x');
  if (::fork() == 0) {
    for (int i = 1; i <= kWarmup + calls; ++i) {
      await(to_child, buffer.data(), bytes, static_cast<uint32_t>(i));
      post(to_parent, buffer.data(), bytes, static_cast<uint32_t>(i));
    }
    std::_Exit(0);
  }
  std::vector<double> us;
  for (int i = 1; i <= kWarmup + calls; ++i) {
    const auto t0 = Clock::now();
    post(to_child, buffer.data(), bytes, static_cast<uint32_t>(i));
    await(to_parent, buffer.data(), bytes, static_cast<uint32_t>(i));
    if (i > kWarmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  ::wait(nullptr);
  ::munmap(region, 2 * slot_bytes);
  return median(us);
}

int echo_server(int port, size_t bytes, int calls) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(listener, 1) != 0) return 3;
  const int fd = ::accept(listener, nullptr, nullptr);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::vector<char> buffer(bytes);
  for (int i = 0; i < kWarmup + calls; ++i) {
    read_all(fd, buffer.data(), bytes);
    write_all(fd, buffer.data(), bytes);
  }
  return 0;
}

int echo_client(const char* host, int port, size_t bytes, int calls) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host, &a.sin_addr) != 1) return 2;
  for (int tries = 0; ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0; ++tries) {
    if (tries > 100) return 3;  // the server is not up after 10 s
    ::usleep(100000);
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::vector<char> buffer(bytes, 'x');
  std::vector<double> us;
  for (int i = 0; i < kWarmup + calls; ++i) {
    const auto t0 = Clock::now();
    write_all(fd, buffer.data(), bytes);
    read_all(fd, buffer.data(), bytes);
    if (i >= kWarmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  std::printf("{\"bytes\": %zu, \"round_trip_us\": %.3f}\n", bytes, median(us));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--echo-server")
    return echo_server(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), std::atoi(argv[4]));
  if (argc == 6 && std::string(argv[1]) == "--echo-client")
    return echo_client(argv[2], std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 10), std::atoi(argv[5]));
  const int calls = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2000;
  std::string out = "{\"calls\": " + std::to_string(calls) + ", \"payloads\": {";
  for (size_t k = 0; k < std::size(kPayloads); ++k) {
    const size_t bytes = kPayloads[k];
    const int n = bytes >= (1 << 20) ? std::max(20, calls / 20) : calls;
    char item[256];
    std::snprintf(item, sizeof(item), "%s\"%zu\": {\"raw_tcp_round_trip_us\": %.3f, \"shm_round_trip_us\": %.3f}",
                  k ? ", " : "", bytes, tcp_round_trip_us(bytes, n), shm_round_trip_us(bytes, n));
    out += item;
  }
  char rate[96];
  std::snprintf(rate, sizeof(rate), "}, \"raw_tcp_one_way_mb_s_1mib\": %.1f}", tcp_one_way_mb_s(1 << 20, 2000));
  std::printf("%s\n", (out + rate).c_str());
  return 0;
}
