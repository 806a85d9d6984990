#include "zap_token_gate.h"

#include <vector>
#include <zmq_addon.hpp>

#include "ddpscope/error.h"

namespace ddpscope::rpc {
namespace {

// Compares without stopping at the first difference: how long a refusal took must not
// tell a guesser how much of the token it had right.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    diff |= static_cast<unsigned>(static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
  return diff == 0;
}

}  // namespace

ZapTokenGate::ZapTokenGate(zmq::context_t& context) : socket_(context, zmq::socket_type::rep) {
  socket_.set(zmq::sockopt::linger, 0);
  try {
    socket_.bind("inproc://zeromq.zap.01");  // where ZeroMQ sends a context's ZAP requests
  } catch (const zmq::error_t& e) {
    throw DDPSCOPE_ERROR("the ZeroMQ RPC transport cannot start its token check: ", e.what());
  }
  thread_ = std::thread([this] { serve(); });
}

ZapTokenGate::~ZapTokenGate() { close(); }

void ZapTokenGate::close() {
  if (stop_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  socket_.close();
}

void ZapTokenGate::set_token(const std::string& token) {
  std::lock_guard<std::mutex> lock(mutex_);
  token_ = token;
}

bool ZapTokenGate::admits(const std::string& mechanism, const std::string& password) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (token_.empty()) return true;
  return mechanism == "PLAIN" && same_secret(password, token_);
}

// A request: version "1.0", request id, domain, address, routing id, mechanism, then the
// mechanism's credentials (PLAIN: user name, password). The answer: version, request id,
// status code, status text, user id, metadata.
void ZapTokenGate::serve() {
  while (!stop_.load()) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) == 0) continue;
      std::vector<zmq::message_t> request;
      if (!zmq::recv_multipart(socket_, std::back_inserter(request), zmq::recv_flags::dontwait)) continue;
      const auto frame = [&request](size_t k) { return k < request.size() ? request[k].to_string() : std::string(); };
      const bool ok = request.size() >= 6 && frame(0) == "1.0" && admits(frame(5), frame(7));
      if (!ok) refused_.fetch_add(1);
      std::vector<zmq::const_buffer> reply = {
          zmq::str_buffer("1.0"),
          zmq::buffer(request.size() > 1 ? request[1].data() : nullptr, request.size() > 1 ? request[1].size() : 0),
          ok ? zmq::str_buffer("200") : zmq::str_buffer("400"),
          ok ? zmq::str_buffer("OK") : zmq::str_buffer("not this job's token"),
          zmq::str_buffer(""),
          zmq::str_buffer("")};
      zmq::send_multipart(socket_, reply);
    } catch (const zmq::error_t&) {
      if (stop_.load()) return;  // EINTR, or the context ending
    }
  }
}

}  // namespace ddpscope::rpc
