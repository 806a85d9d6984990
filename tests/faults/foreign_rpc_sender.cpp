// A sender from outside a job, for the fault suite's security scenario: it connects to a
// worker's RPC endpoint like any peer of its transport (ZeroMQ's tcp://, or the TCP
// transport's ddptcp://, whose framing it writes itself) and sends COUNT messages of each
// kind the agent must reject without acting on them: a wrong token, no token at all (the
// header where the token belongs), and a single frame of garbage. It never learns the
// job's token: it only has what a process on the same network could find (the port).
//   foreign_rpc_sender tcp://127.0.0.1:PORT COUNT
//   foreign_rpc_sender ddptcp://127.0.0.1:PORT COUNT
#include <arpa/inet.h>
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

// The messages over one plain TCP connection, framed as the TCP transport frames them (a
// u32 frame count, a u64 size per frame, the bytes); false when it cannot connect.
bool send_framed(const std::string& endpoint, const std::vector<std::vector<std::string>>& messages) {
  const int port = std::atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return false;
  std::string bytes;
  for (const auto& frames : messages) {
    const auto n = static_cast<uint32_t>(frames.size());
    bytes.append(reinterpret_cast<const char*>(&n), 4);
    for (const auto& f : frames) {
      const uint64_t size = f.size();
      bytes.append(reinterpret_cast<const char*>(&size), 8);
    }
    for (const auto& f : frames)
      bytes += f;
  }
  const bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  ::close(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: foreign_rpc_sender ENDPOINT COUNT\n");
    return 2;
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
