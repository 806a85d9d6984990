// A sender from outside a job, for the fault suite's security scenario: it connects to a
// worker's RPC endpoint like any peer of its transport (ZeroMQ's tcp://, or the TCP
// transport's ddptcp://, whose framing it writes itself) and sends COUNT messages of each
// kind the agent must reject without acting on them: a wrong token, no token at all (the
// header where the token belongs), and a single frame of garbage. It never learns the
// job's token: it only has what a process on the same network could find (the port).
// Over ddptcp:// each message goes on a connection of its own (a worker drops a connection
// whose first message lacks the token). `big MIB`: one message claiming a 1 GiB frame behind
// a wrong token, then MIB MiB of its bytes, as far as the worker takes them.
//   foreign_rpc_sender tcp://127.0.0.1:PORT COUNT
//   foreign_rpc_sender ddptcp://127.0.0.1:PORT COUNT
//   foreign_rpc_sender ddptcp://127.0.0.1:PORT big MIB
//   foreign_rpc_sender tcp://127.0.0.1:PORT big MIB     (ZeroMQ: the frame sent whole)
#include <arpa/inet.h>
#include <signal.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <zmq.hpp>

namespace {

// A plain TCP connection to the endpoint's port on loopback; -1 when it cannot connect.
int connect_to(const std::string& endpoint) {
  const int port = std::atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return fd;
  ::close(fd);
  return -1;
}

// The frame count and sizes, as the TCP transport frames a message (then the frames' bytes).
std::string frame_head(const std::vector<uint64_t>& sizes) {
  std::string bytes;
  const auto n = static_cast<uint32_t>(sizes.size());
  bytes.append(reinterpret_cast<const char*>(&n), 4);
  for (uint64_t size : sizes)
    bytes.append(reinterpret_cast<const char*>(&size), 8);
  return bytes;
}

// Each message on a connection of its own; false when one cannot connect.
bool send_framed(const std::string& endpoint, const std::vector<std::vector<std::string>>& messages) {
  for (const auto& frames : messages) {
    const int fd = connect_to(endpoint);
    if (fd < 0) return false;
    std::vector<uint64_t> sizes;
    for (const auto& f : frames)
      sizes.push_back(f.size());
    std::string bytes = frame_head(sizes);
    for (const auto& f : frames)
      bytes += f;
    [[maybe_unused]] const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    ::close(fd);
  }
  return true;
}

// A 1 GiB frame claimed behind a wrong token, then `mib` MiB of it: prints how much the
// worker took before it closed the connection.
int send_big(const std::string& endpoint, int mib) {
  signal(SIGPIPE, SIG_IGN);
  const int fd = connect_to(endpoint);
  if (fd < 0) return 1;
  std::string head = frame_head({32, 32, uint64_t{1} << 30}) + std::string(32, 'z') + std::string(32, '\x01');
  if (::write(fd, head.data(), head.size()) != static_cast<ssize_t>(head.size())) return 1;
  const std::string chunk(1 << 20, '\0');
  int64_t taken = 0;
  for (int i = 0; i < mib; ++i) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    taken += n;
  }
  ::close(fd);
  std::printf("the worker took %lld of %d MiB sent behind a wrong token\n", static_cast<long long>(taken >> 20), mib);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: foreign_rpc_sender ENDPOINT COUNT | ENDPOINT big MIB\n");
    return 2;
  }
  if (std::string(argv[2]) == "big") {
    const int mib = argc > 3 ? std::atoi(argv[3]) : 256;
    if (std::string(argv[1]).rfind("ddptcp://", 0) == 0) return send_big(argv[1], mib);
    // ZeroMQ sends a message whole: a wrong token, then one frame of MIB MiB.
    zmq::context_t context;
    zmq::socket_t dealer(context, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 5000);
    dealer.connect(argv[1]);
    dealer.send(zmq::buffer(std::string(32, 'z')), zmq::send_flags::sndmore);
    dealer.send(zmq::buffer(std::string(static_cast<size_t>(mib) << 20, '\0')), zmq::send_flags::none);
    std::this_thread::sleep_for(std::chrono::seconds(2));  // on its way before linger ends
    std::printf("sent a %d MiB frame behind a wrong token to %s\n", mib, argv[1]);
    return 0;
  }
  const int count = std::atoi(argv[2]);
  const std::string header(32, '\x01'), body =
                                            "\x02\x04"
                                            "echo";
  if (std::string(argv[1]).rfind("ddptcp://", 0) == 0) {
    std::vector<std::vector<std::string>> messages;
    for (int i = 0; i < count; ++i) {
      messages.push_back({std::string(32, static_cast<char>('a' + i % 26)), header, body});
      messages.push_back({header, body});
      messages.push_back({std::string(100, '\xff')});
    }
    if (!send_framed(argv[1], messages)) return 1;
    std::printf("sent %d foreign messages to %s\n", 3 * count, argv[1]);
    return 0;
  }
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 2000);
  dealer.connect(argv[1]);
  int sent = 0;
  for (int i = 0; i < count; ++i) {
    const std::string wrong_token(32, static_cast<char>('a' + i % 26));
    dealer.send(zmq::buffer(wrong_token), zmq::send_flags::sndmore);
    dealer.send(zmq::buffer(header), zmq::send_flags::sndmore);
    dealer.send(zmq::buffer(body), zmq::send_flags::none);
    dealer.send(zmq::buffer(header), zmq::send_flags::sndmore);  // no token: the header first
    dealer.send(zmq::buffer(body), zmq::send_flags::none);
    dealer.send(zmq::buffer(std::string(100, '\xff')), zmq::send_flags::none);
    sent += 3;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let them leave before linger ends
  std::printf("sent %d foreign messages to %s\n", sent, argv[1]);
  return 0;
}
