// A sender from outside a job, for the fault suite's security scenario: it connects to a
// worker's RPC endpoint like any ZeroMQ peer and sends COUNT messages of each kind the
// agent must reject without acting on them: a wrong token, no token at all (the header
// where the token belongs), and a single frame of garbage. It never learns the job's
// token: it only has what a process on the same network could find (the port).
//   foreign_rpc_sender tcp://127.0.0.1:PORT COUNT
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <zmq.hpp>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: foreign_rpc_sender ENDPOINT COUNT\n");
    return 2;
  }
  const int count = std::atoi(argv[2]);
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 2000);
  dealer.connect(argv[1]);
  const std::string header(32, '\x01'), body =
                                            "\x02\x04"
                                            "echo";
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
