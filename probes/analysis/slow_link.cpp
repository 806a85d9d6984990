// The slow-link verdict of link_matrix.h: which link, rank or host is markedly slower than
// the rest, and in words a user reads.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ddpscope/median.h"
#include "link_matrix.h"

namespace ddpscope::probes {
namespace {

struct Rated {
  const RankLink* link;
  double gbps;
  bool slow = false;
};

// The links the verdict may judge: measured ones when the run measured any, else those
// whose traffic is large enough to tell. On several hosts only the links between hosts: a
// host's own links (shared memory) are of another kind, many times faster, and would make
// every network link look slow.
std::vector<Rated> rated_links(const LinkReport& report) {
  std::set<std::string> hosts;
  for (const RankLink& l : report.links)
    hosts.insert({l.src_host, l.dst_host});
  std::vector<Rated> out;
  for (const RankLink& l : report.links) {
    if (hosts.size() > 1 && l.src_host == l.dst_host) continue;
    if (report.measured) {
      if (!std::isnan(l.measured_gbps)) out.push_back({&l, l.measured_gbps});
    } else if (l.rated_bytes >= LinkReport::kVerdictBytes) {
      out.push_back({&l, l.achieved_gbps()});
    }
  }
  return out;
}

// What a link is read against: the median over ranks of each rank's median link. A slow
// rank or host touches many links (with 4 hosts, half of them), but only its own ranks'
// medians are slow.
double typical_rate(const std::vector<Rated>& rated) {
  std::map<int, std::vector<double>> of_rank;
  for (const Rated& r : rated) {
    of_rank[r.link->src].push_back(r.gbps);
    of_rank[r.link->dst].push_back(r.gbps);
  }
  std::vector<double> medians;
  for (auto& [rank, rates] : of_rank)
    medians.push_back(median(rates));
  return median(medians);
}

// True when every slow link has an end that `is_culprit` picks and every judged link with
// such an end is slow (the whole rank or host is slow, not one of its links).
template <typename Pick>
bool explains_all(const std::vector<Rated>& rated, Pick is_culprit) {
  bool any = false;
  for (const Rated& r : rated) {
    const bool touches = is_culprit(r.link->src, r.link->src_host) || is_culprit(r.link->dst, r.link->dst_host);
    if (r.slow != touches) return false;
    any = any || touches;
  }
  return any;
}

std::string ranks_text(const std::set<int>& ranks) {
  std::string out;
  for (int r : ranks)
    out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

void name_culprit(const std::vector<Rated>& rated, SlowLinkVerdict& v) {
  std::set<int> ranks;
  std::map<std::string, std::set<int>> ranks_of_host;
  for (const Rated& r : rated) {
    if (r.slow) ranks.insert({r.link->src, r.link->dst});
    ranks_of_host[r.link->src_host].insert(r.link->src);
    ranks_of_host[r.link->dst_host].insert(r.link->dst);
  }
  // A host of several ranks first: its own link is the common part of their slow links.
  for (const auto& [host, members] : ranks_of_host) {
    if (host.empty() || members.size() < 2) continue;
    if (explains_all(rated, [&](int, const std::string& h) { return h == host; })) {
      v.culprit = SlowLinkVerdict::Culprit::Host;
      v.host = host;
      v.rank = *members.begin();
      return;
    }
  }
  for (int rank : ranks) {
    if (explains_all(rated, [&](int r, const std::string&) { return r == rank; })) {
      v.culprit = SlowLinkVerdict::Culprit::Rank;
      v.rank = rank;
      for (const Rated& r : rated)
        if (r.link->src == rank) v.host = r.link->src_host;
      return;
    }
  }
  v.culprit = SlowLinkVerdict::Culprit::Links;
}

std::string verdict_text(const SlowLinkVerdict& v, const std::map<std::string, std::set<int>>& hosts,
                         bool has_allreduce) {
  std::string who;
  if (v.culprit == SlowLinkVerdict::Culprit::Rank) {
    who = "rank " + std::to_string(v.rank) + "'s link" + (v.host.empty() ? "" : " (host " + v.host + ")");
  } else if (v.culprit == SlowLinkVerdict::Culprit::Host) {
    const auto members = hosts.find(v.host);
    who = "host " + v.host + "'s link" + (members == hosts.end() ? "" : " (ranks " + ranks_text(members->second) + ")");
  } else {
    for (size_t i = 0; i < v.links.size() && i < 4; ++i)
      who += (i ? ", " : "") + std::to_string(v.links[i].first) + "->" + std::to_string(v.links[i].second);
    if (v.links.size() > 4) who += " and " + std::to_string(v.links.size() - 4) + " more";
    who = "the link" + std::string(v.links.size() > 1 ? "s " : " ") + who;
  }
  std::string text = who + (v.links.size() > 1 && v.culprit == SlowLinkVerdict::Culprit::Links ? " run" : " runs") +
                     " at " + link_rate_text(v.slow_gbps) + " where the others run at " +
                     link_rate_text(v.others_gbps) +
                     (v.measured ? " (measured by --measure-links)" : " (from its traffic)");
  if (has_allreduce) text += "; every allreduce waits for it";
  return text;
}

}  // namespace

std::optional<SlowLinkVerdict> find_slow_link(const LinkReport& report, bool has_allreduce) {
  // On one host the ranks talk through shared memory: its "links" are memory copies, which
  // a busy core slows two-fold (a one-host job beside a test suite read 19.9 and 44.8 Gbit/s),
  // no network to blame.
  std::map<std::string, std::set<int>> hosts;  // each host's ranks
  for (const RankLink& l : report.links) {
    hosts[l.src_host].insert(l.src);
    hosts[l.dst_host].insert(l.dst);
  }
  if (hosts.size() < 2) return std::nullopt;
  std::vector<Rated> rated = rated_links(report);
  if (rated.size() < 3) return std::nullopt;  // nothing to compare a link with
  const double typical = typical_rate(rated);
  std::vector<double> slow, others;
  SlowLinkVerdict v;
  for (Rated& r : rated) {
    r.slow = r.gbps < LinkReport::kSlowShare * typical;
    (r.slow ? slow : others).push_back(r.gbps);
    if (r.slow) v.links.push_back({r.link->src, r.link->dst});
  }
  if (slow.empty() || others.empty()) return std::nullopt;
  v.slow_gbps = median(slow);
  v.others_gbps = median(others);
  v.measured = report.measured;
  name_culprit(rated, v);
  v.text = verdict_text(v, hosts, has_allreduce);
  return v;
}

}  // namespace ddpscope::probes
