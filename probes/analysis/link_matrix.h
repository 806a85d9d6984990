// Links between ranks and hosts: what each ordered pair of ranks carried and at
// what rate, what `train --measure-links` measured it could carry, the same per pair of
// hosts, and whether one link or host is markedly slower than its peers.
//
// Traffic per pair comes from what names both ends: point-to-point ops (a send's pg_op
// span: bytes to its peer), the engine's ring allreduce (each ring_step sends a block to
// the next rank) and RPC messages. A collective through MPI or NCCL names no pairs: its
// bytes stay a group figure (collective_bandwidth.h). A pair's achieved rate counts only
// transfers of kMinBytes or more, timed by their own spans (a lower bound: a send also
// waits for its receiver).
//
// The verdict reads the measured ceilings when the run has them, else the achieved rates
// of pairs that carried kVerdictBytes or more, of the links between hosts only (a run on one
// host has no network link to judge: no verdict). A link is slow below kSlowShare of the median over ranks of each
// rank's median link; when every slow link has one rank (or one host) at an end and that rank's (host's) links are all
// slow, the rank or host is named, else the links.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::probes {

struct RankLink {
  int src = 0, dst = 0;  // ordered: src sent to dst
  std::string src_host, dst_host;
  // Traffic seen in the run (outside the link test).
  int64_t bytes = 0, transfers = 0;
  int64_t rated_bytes = 0;  // of transfers of kMinBytes or more, whose time is rated
  double rated_ms = 0;
  double achieved_gbps() const;  // NaN: nothing rated
  // The link test's best exchange (NaN: not measured), and how many exchanges.
  double measured_gbps = std::numeric_limits<double>::quiet_NaN();
  int64_t measured_bytes = 0;
  int tests = 0;
};

struct HostLink {
  std::string src_host, dst_host;
  int64_t bytes = 0;
  double measured_gbps = std::numeric_limits<double>::quiet_NaN();  // best of its rank pairs
  double achieved_gbps = std::numeric_limits<double>::quiet_NaN();  // over its rank pairs' rated traffic
};

struct SlowLinkVerdict {
  enum class Culprit { Rank, Host, Links } culprit = Culprit::Links;
  int rank = -1;                           // Culprit::Rank (and Host: its lowest rank)
  std::string host;                        // the culprit's host
  std::vector<std::pair<int, int>> links;  // the slow links (ordered pairs)
  double slow_gbps = 0;                    // the slow links' median rate
  double others_gbps = 0;                  // the other links' median rate
  bool measured = false;                   // from the link test, else from traffic
  std::string text;                        // one sentence for the Summary and `why`
};

struct LinkReport {
  static constexpr int64_t kMinBytes = 64 * 1024;
  static constexpr int64_t kVerdictBytes = 8 << 20;
  static constexpr double kSlowShare = 0.5;
  int world_size = 0;
  std::vector<RankLink> links;       // pairs with traffic or a measurement, by (src, dst)
  std::vector<HostLink> host_links;  // between different hosts, by (src, dst)
  bool measured = false;             // the run has link-test exchanges
  // The ring's ceiling: its slowest measured link between neighbours (a ring allreduce's
  // bus bandwidth cannot pass it). NaN: no neighbour measured.
  double ring_ceiling_gbps = std::numeric_limits<double>::quiet_NaN();
  int64_t group_collective_bytes = 0;  // bytes of collectives that name no pairs (MPI, NCCL)
  std::optional<SlowLinkVerdict> slow;
};

LinkReport analyze_links(RunStoreReader& run);

// The verdict on a report's links (slow_link.cpp); `has_allreduce`: the job's allreduces
// wait for every rank's link, which the sentence then says.
std::optional<SlowLinkVerdict> find_slow_link(const LinkReport& report, bool has_allreduce);

// "205 Mbit/s", "1.92 Gbit/s": a link's rate as links are sold (bits, decimal units).
std::string link_rate_text(double gbytes_per_s);

}  // namespace ddpscope::probes
