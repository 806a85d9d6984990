#include "rpc_bootstrap.h"

#include <unistd.h>

#include <cstring>
#include <set>

#include "ddpscope/random_token.h"
#include "listen_address.h"
#include "transport_choice.h"

namespace ddpscope::rpc {
namespace {

constexpr size_t kGatherBytes = 256;  // names, hosts and endpoints exchanged at start

// Every rank's `mine` (at most kGatherBytes bytes), through the process group.
std::vector<std::string> allgather_strings(c10d::ProcessGroup& group, const std::string& mine, const char* what) {
  DDPSCOPE_CHECK(mine.size() < kGatherBytes, "init_rpc: the ", what, " '", mine, "' is longer than ", kGatherBytes - 1,
                 " bytes");
  constexpr int64_t kWords = kGatherBytes / 8;
  Tensor in = Tensor::zeros({kWords}, DType::I64);
  std::memcpy(in.raw_data(), mine.data(), mine.size());
  std::vector<Tensor> out;
  for (int r = 0; r < group.size(); ++r)
    out.push_back(Tensor::zeros({kWords}, DType::I64));
  group.allgather(out, in)->wait();
  std::vector<std::string> result;
  for (const auto& t : out) {
    const char* p = static_cast<const char*>(t.raw_data());
    result.emplace_back(p, strnlen(p, kGatherBytes));
  }
  return result;
}

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// Where this worker listens: the option, loopback when the job is on one host, else the
// address the other hosts reach this one by. Empty when there is none.
std::string choose_listen_address(const RpcBackendOptions& options, const std::vector<std::string>& hosts, int self) {
  if (!options.listen_address.empty()) return options.listen_address;
  if (std::set<std::string>(hosts.begin(), hosts.end()).size() == 1) return "127.0.0.1";
  if (const char* env = std::getenv("DDPSCOPE_RPC_ADDRESS"); env && *env) return env;
  // The interface this host's route to another of the job's hosts leaves from: the
  // job's network, not whichever interface happens to be listed first.
  std::string address;
  for (const std::string& h : hosts) {
    if (h != hosts[static_cast<size_t>(self)]) {
      address = local_address_towards(h);
      break;
    }
  }
  if (address.empty() || address.rfind("127.", 0) == 0) address = first_external_ipv4();
  return address;
}

}  // namespace

Bootstrap bootstrap_over_group(c10d::ProcessGroup& g, const std::string& requested_name,
                               const RpcBackendOptions& options) {
  Bootstrap b;
  b.setup.self = g.rank();
  const std::string name = requested_name.empty() ? "worker" + std::to_string(g.rank()) : requested_name;

  // Listen where the others reach us, and nowhere else.
  const auto hosts = allgather_strings(g, host_name(), "host name");
  const std::string address = choose_listen_address(options, hosts, g.rank());
  std::string bind_error;
  try {
    const std::string kind = transport_kind(options.transport);
    DDPSCOPE_CHECK(!address.empty(), "no non-loopback IPv4 address found; set DDPSCOPE_RPC_ADDRESS");
    b.transport = open_transport(kind, address, options.max_frame_bytes);
  } catch (const Error& e) {
    bind_error = e.message();
  }
  // Every rank reaches this point even when its bind failed, so none waits forever.
  b.setup.endpoints = allgather_strings(g, bind_error.empty() ? b.transport->endpoint() : "!" + bind_error, "endpoint");
  for (int r = 0; r < g.size(); ++r) {
    const std::string& e = b.setup.endpoints[static_cast<size_t>(r)];
    DDPSCOPE_CHECK(e.empty() || e[0] != '!', "init_rpc: rank ", r, " could not start its RPC agent: ", e.substr(1));
  }
  const auto names = allgather_strings(g, name, "worker name");
  std::set<std::string> seen;
  for (int r = 0; r < g.size(); ++r) {
    DDPSCOPE_CHECK(seen.insert(names[static_cast<size_t>(r)]).second, "init_rpc: two workers are named '",
                   names[static_cast<size_t>(r)], "' (one is rank ", r, "); give each worker its own name");
    b.setup.workers.push_back({names[static_cast<size_t>(r)], r});
  }
  // The token: the launcher's, or worker 0's own, shared with all.
  std::string token = options.token;
  if (token.empty()) {
    const char* env = std::getenv("DDPSCOPE_RUN_TOKEN");
    token = env && *env ? env : random_token();
  }
  b.setup.token = allgather_strings(g, token, "token")[0];
  return b;
}

}  // namespace ddpscope::rpc
