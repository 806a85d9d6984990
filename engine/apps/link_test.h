// The links' ceiling (`train --measure-links`): before training, each pair of
// ring neighbours and one pair of ranks per pair of hosts time a short exchange in both
// directions, so that collectives can be read against what the links can carry rather
// than against the run's own best.
//
// A direction a -> b: a sends a size (one i64), then the payload, and b answers with one
// i64 once it holds the whole payload; a times the payload's send to the answer. The size
// grows x4 from 1 MiB until one exchange takes 200 ms or reaches 64 MiB (a rate limiter's
// burst and a send's start-up then weigh little: 1 MiB at 200 Mbit/s, a quarter of it sent
// in the limiter's 256 KiB burst, would read a third too fast); then 3 timed exchanges of that size,
// each a link_test span on the sender (peer = the receiver, bytes = the payload, param =
// the exchange's number). Readers take a pair's best exchange as its ceiling.
//
// Pairs that share no rank are measured at the same time (rounds of disjoint pairs, a
// barrier between rounds), as an allreduce loads every link at once.
#pragma once

#include <utility>
#include <vector>

#include "c10d/process_group.h"

namespace ddpscope::apps {

struct LinkPair {
  int a = 0, b = 0;  // a < b
  bool operator==(const LinkPair&) const = default;
};

// The pairs measured for a job whose rank r runs on host_of[r] (any id; equal ids: one
// host): every rank with the next in rank order (the ring), and for each pair of hosts
// their lowest ranks; each once.
std::vector<LinkPair> link_test_pairs(const std::vector<int64_t>& host_of);

// The pairs in rounds: no rank twice in a round; every rank computes the same rounds.
std::vector<std::vector<LinkPair>> link_test_rounds(const std::vector<LinkPair>& pairs);

// Every rank of `group` calls it; returns after every pair was measured. A link that
// fails or stalls fails as the group's send or recv does (naming the op and the peer).
void measure_links(c10d::ProcessGroup& group);

}  // namespace ddpscope::apps
