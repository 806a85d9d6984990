#include "link_test.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <string>

#include "ddpscope/log.h"
#include "probe.h"

namespace ddpscope::apps {
namespace {

constexpr int64_t kFirstBytes = 1 << 20;
constexpr int64_t kMostBytes = 64 << 20;
constexpr double kLongEnoughS = 0.2;
constexpr int kTimedExchanges = 3;
constexpr int kTag = 7301;  // apart from any tag a job's own send/recv might use

int64_t this_host_id() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  // 52 bits: the id travels as a tensor element made from a double.
  return static_cast<int64_t>(std::hash<std::string>{}(name) & ((int64_t{1} << 52) - 1));
}

std::vector<int64_t> host_ids(c10d::ProcessGroup& group) {
  const Device device = group.tensor_device();
  std::vector<Tensor> all;
  for (int r = 0; r < group.size(); ++r)
    all.push_back(Tensor::zeros({1}, DType::I64, device));
  group.allgather(all, Tensor::full({1}, static_cast<double>(this_host_id()), DType::I64).to(device))->wait();
  std::vector<int64_t> ids;
  for (const Tensor& t : all)
    ids.push_back(t.to(Device::cpu()).item<int64_t>());
  return ids;
}

Tensor one_word(c10d::ProcessGroup& group, int64_t value) {
  return Tensor::full({1}, static_cast<double>(value), DType::I64).to(group.tensor_device());
}

// One exchange from this rank to `peer`; its seconds, from the payload's send to the answer.
double send_exchange(c10d::ProcessGroup& group, int peer, const Tensor& payload) {
  group.send(one_word(group, static_cast<int64_t>(payload.nbytes())), peer, kTag)->wait();
  const auto start = std::chrono::steady_clock::now();
  group.send(payload, peer, kTag)->wait();
  Tensor answer = one_word(group, 0);
  group.recv(answer, peer, kTag)->wait();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The sender's side of one direction.
void send_direction(c10d::ProcessGroup& group, int peer) {
  const Device device = group.tensor_device();
  int64_t bytes = kFirstBytes;
  for (;;) {  // sizing: not recorded
    const double s = send_exchange(group, peer, Tensor::empty({bytes / 4}, DType::F32, device));
    if (s >= kLongEnoughS || bytes >= kMostBytes) break;
    bytes = std::min(bytes * 4, kMostBytes);
  }
  const Tensor payload = Tensor::empty({bytes / 4}, DType::F32, device);
  for (int k = 0; k < kTimedExchanges; ++k) {
    DDPSCOPE_SPAN(span, probes::Kind::LinkTest, "link test");
    span.args().peer = static_cast<int16_t>(peer);
    span.args().bytes = bytes;
    span.args().param = k;
    send_exchange(group, peer, payload);
  }
  group.send(one_word(group, 0), peer, kTag)->wait();  // size 0: done
}

// The receiver's side: payloads until the sender says 0. The buffer is made once per size
// and never filled: a 64 MiB fill before each receive sat inside the sender's timing (under
// load the 2 Gbit/s links read up to 14% slow).
void receive_direction(c10d::ProcessGroup& group, int peer) {
  const Device device = group.tensor_device();
  Tensor payload;
  for (;;) {
    Tensor size = one_word(group, 0);
    group.recv(size, peer, kTag)->wait();
    const int64_t bytes = size.to(Device::cpu()).item<int64_t>();
    if (bytes == 0) return;
    if (!payload.defined() || static_cast<int64_t>(payload.nbytes()) != bytes)
      payload = Tensor::empty({bytes / 4}, DType::F32, device);
    group.recv(payload, peer, kTag)->wait();
    group.send(one_word(group, 1), peer, kTag)->wait();
  }
}

}  // namespace

std::vector<LinkPair> link_test_pairs(const std::vector<int64_t>& host_of) {
  const int n = static_cast<int>(host_of.size());
  std::vector<LinkPair> pairs;
  std::set<std::pair<int, int>> seen;
  const auto add = [&](int a, int b) {
    if (a == b) return;
    if (a > b) std::swap(a, b);
    if (seen.insert({a, b}).second) pairs.push_back({a, b});
  };
  for (int r = 0; r < n; ++r)
    add(r, (r + 1) % n);
  std::vector<int> first_of_host;  // the lowest rank of each host, in rank order
  for (int r = 0; r < n; ++r)
    if (std::find(host_of.begin(), host_of.begin() + r, host_of[r]) == host_of.begin() + r) first_of_host.push_back(r);
  for (size_t i = 0; i < first_of_host.size(); ++i)
    for (size_t j = i + 1; j < first_of_host.size(); ++j)
      add(first_of_host[i], first_of_host[j]);
  return pairs;
}

std::vector<std::vector<LinkPair>> link_test_rounds(const std::vector<LinkPair>& pairs) {
  std::vector<std::vector<LinkPair>> rounds;
  std::vector<std::set<int>> busy;
  for (const LinkPair& p : pairs) {
    size_t r = 0;
    while (r < rounds.size() && (busy[r].count(p.a) || busy[r].count(p.b)))
      ++r;
    if (r == rounds.size()) {
      rounds.emplace_back();
      busy.emplace_back();
    }
    rounds[r].push_back(p);
    busy[r].insert({p.a, p.b});
  }
  return rounds;
}

void measure_links(c10d::ProcessGroup& group) {
  if (group.size() < 2) return;
  const int me = group.rank();
  const auto rounds = link_test_rounds(link_test_pairs(host_ids(group)));
  probes::set_iteration(0);
  DDPSCOPE_INSTANT(probes::Kind::Mark, "link test");
  for (const auto& round : rounds) {
    for (const LinkPair& p : round) {
      if (p.a == me) {
        send_direction(group, p.b);
        receive_direction(group, p.b);
      } else if (p.b == me) {
        receive_direction(group, p.a);
        send_direction(group, p.a);
      }
    }
    group.barrier()->wait();
  }
  DDPSCOPE_INSTANT(probes::Kind::Mark, "link test end");
  size_t pairs = 0;
  for (const auto& round : rounds)
    pairs += round.size();
  if (me == 0) log::info("links measured: {} pairs of ranks in {} rounds", pairs, rounds.size());
}

}  // namespace ddpscope::apps
