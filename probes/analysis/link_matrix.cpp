#include "link_matrix.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "ddpscope/median.h"
#include "ddpscope/printf_string.h"

namespace ddpscope::probes {
namespace {

using PairKey = std::pair<int, int>;

// Per rank, the link test's time [begin, end]: its own sends and receives are not traffic.
std::map<int, std::pair<int64_t, int64_t>> link_test_windows(RunStoreReader& run) {
  std::map<int, std::pair<int64_t, int64_t>> windows;
  for (const SpanRow& s : run.spans({.kinds = {Kind::Mark}})) {
    if (s.name == "link test")
      windows[s.rank].first = s.t_begin_ns;
    else if (s.name == "link test end")
      windows[s.rank].second = s.t_begin_ns;
  }
  return windows;
}

struct Builder {
  std::map<PairKey, RankLink> links;
  RankLink& at(int src, int dst) {
    RankLink& l = links[{src, dst}];
    l.src = src;
    l.dst = dst;
    return l;
  }
  void traffic(int src, int dst, int64_t bytes, int64_t duration_ns) {
    if (src < 0 || dst < 0 || src == dst || bytes <= 0) return;
    RankLink& l = at(src, dst);
    l.bytes += bytes;
    ++l.transfers;
    if (bytes >= LinkReport::kMinBytes && duration_ns > 0) {
      l.rated_bytes += bytes;
      l.rated_ms += static_cast<double>(duration_ns) / 1e6;
    }
  }
};

void read_spans(RunStoreReader& run, Builder& b, LinkReport& report) {
  const auto windows = link_test_windows(run);
  const auto in_link_test = [&](const SpanRow& s) {
    const auto w = windows.find(s.rank);
    return w != windows.end() && s.t_begin_ns >= w->second.first &&
           (w->second.second == 0 || s.t_begin_ns <= w->second.second);
  };
  bool ring = false;
  int64_t allreduce_bytes = 0, other_group_bytes = 0;
  for (const SpanRow& s : run.spans({.kinds = {Kind::LinkTest, Kind::PgOp, Kind::RingStep}})) {
    const int64_t duration = s.t_end_ns - s.t_begin_ns;
    if (s.kind == Kind::LinkTest) {
      if (s.peer < 0 || s.bytes <= 0 || duration <= 0) continue;
      RankLink& l = b.at(s.rank, static_cast<int>(s.peer));
      const double gbps = static_cast<double>(s.bytes) / static_cast<double>(duration);
      if (!(l.measured_gbps >= gbps)) {  // NaN or slower: this exchange is the best so far
        l.measured_gbps = gbps;
        l.measured_bytes = s.bytes;
      }
      ++l.tests;
      report.measured = true;
    } else if (s.kind == Kind::RingStep) {
      ring = true;
      b.traffic(s.rank, static_cast<int>(s.peer), s.bytes, duration);
    } else if (!in_link_test(s) && s.bytes > 0) {
      if (s.name == "send")
        b.traffic(s.rank, static_cast<int>(s.peer), s.bytes, duration);
      else if (s.name == "allreduce")
        allreduce_bytes += s.bytes;
      else if (s.name != "recv")
        other_group_bytes += s.bytes;
    }
  }
  report.group_collective_bytes = other_group_bytes + (ring ? 0 : allreduce_bytes);
}

void read_messages(RunStoreReader& run, Builder& b) {
  for (const MessageRow& m : run.messages())
    b.traffic(m.src_rank, m.dst_rank, m.bytes, m.t_recv_ns >= 0 && m.t_send_ns >= 0 ? m.t_recv_ns - m.t_send_ns : 0);
}

std::vector<HostLink> host_links_of(const std::vector<RankLink>& links) {
  std::map<std::pair<std::string, std::string>, HostLink> hosts;
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, double>> rated;
  for (const RankLink& l : links) {
    if (l.src_host == l.dst_host) continue;
    const auto key = std::make_pair(l.src_host, l.dst_host);
    HostLink& h = hosts[key];
    h.src_host = l.src_host;
    h.dst_host = l.dst_host;
    h.bytes += l.bytes;
    if (!std::isnan(l.measured_gbps) && !(h.measured_gbps >= l.measured_gbps)) h.measured_gbps = l.measured_gbps;
    rated[key].first += l.rated_bytes;
    rated[key].second += l.rated_ms;
  }
  std::vector<HostLink> out;
  for (auto& [key, h] : hosts) {
    const auto& [bytes, ms] = rated[key];
    if (ms > 0) h.achieved_gbps = static_cast<double>(bytes) / (ms * 1e6);
    out.push_back(h);
  }
  return out;
}

double ring_ceiling(const std::vector<RankLink>& links, int world_size) {
  double ceiling = std::numeric_limits<double>::quiet_NaN();
  for (const RankLink& l : links) {
    const bool neighbours = (l.src + 1) % world_size == l.dst || (l.dst + 1) % world_size == l.src;
    if (neighbours && !std::isnan(l.measured_gbps) && !(ceiling <= l.measured_gbps)) ceiling = l.measured_gbps;
  }
  return ceiling;
}

}  // namespace

double RankLink::achieved_gbps() const {
  return rated_ms > 0 ? static_cast<double>(rated_bytes) / (rated_ms * 1e6) : std::numeric_limits<double>::quiet_NaN();
}

std::string link_rate_text(double gbytes_per_s) {
  const double bits = gbytes_per_s * 8e9;
  if (std::isnan(bits)) return "-";
  const auto three = [](double v, const char* unit) {
    return printf_string(v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, unit);
  };
  if (bits >= 1e9) return three(bits / 1e9, "Gbit/s");
  if (bits >= 1e6) return three(bits / 1e6, "Mbit/s");
  return three(bits / 1e3, "kbit/s");
}

LinkReport analyze_links(RunStoreReader& run) {
  LinkReport report;
  report.world_size = run.run().world_size;
  Builder b;
  read_spans(run, b, report);
  read_messages(run, b);
  std::map<int, std::string> host_of;
  for (const RankRow& r : run.ranks())
    host_of[r.rank] = r.host;
  for (auto& [key, l] : b.links) {
    l.src_host = host_of[l.src];
    l.dst_host = host_of[l.dst];
    report.links.push_back(l);
  }
  report.host_links = host_links_of(report.links);
  report.ring_ceiling_gbps = ring_ceiling(report.links, std::max(1, report.world_size));
  const bool has_allreduce =
      !run.spans({.kinds = {Kind::Allreduce}, .limit = 1}).empty() || report.group_collective_bytes > 0;
  report.slow = find_slow_link(report, has_allreduce);
  return report;
}

}  // namespace ddpscope::probes
