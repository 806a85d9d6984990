#include "link_matrix_text.h"

#include <cmath>

#include "ddpscope/printf_string.h"

namespace ddpscope::probes {
namespace {

nlohmann::json number_or_null(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }

const char* culprit_name(SlowLinkVerdict::Culprit c) {
  switch (c) {
    case SlowLinkVerdict::Culprit::Rank: return "rank";
    case SlowLinkVerdict::Culprit::Host: return "host";
    default: return "links";
  }
}

std::string mib_text(int64_t bytes) { return printf_string("%.1f", static_cast<double>(bytes) / (1 << 20)); }

std::string host_pair(const std::string& a, const std::string& b) {
  return (a.empty() ? "?" : a) + " -> " + (b.empty() ? "?" : b);
}

}  // namespace

nlohmann::json link_report_json(const LinkReport& r) {
  nlohmann::json links = nlohmann::json::array();
  for (const RankLink& l : r.links) {
    links.push_back({{"src", l.src},
                     {"dst", l.dst},
                     {"src_host", l.src_host},
                     {"dst_host", l.dst_host},
                     {"bytes", l.bytes},
                     {"transfers", l.transfers},
                     {"achieved_gbps", number_or_null(l.achieved_gbps())},
                     {"measured_gbps", number_or_null(l.measured_gbps)},
                     {"measured_bytes", l.measured_bytes},
                     {"tests", l.tests}});
  }
  nlohmann::json hosts = nlohmann::json::array();
  for (const HostLink& h : r.host_links) {
    hosts.push_back({{"src_host", h.src_host},
                     {"dst_host", h.dst_host},
                     {"bytes", h.bytes},
                     {"achieved_gbps", number_or_null(h.achieved_gbps)},
                     {"measured_gbps", number_or_null(h.measured_gbps)}});
  }
  nlohmann::json out = {{"world_size", r.world_size},
                        {"measured", r.measured},
                        {"ring_ceiling_gbps", number_or_null(r.ring_ceiling_gbps)},
                        {"group_collective_bytes", r.group_collective_bytes},
                        {"links", links},
                        {"host_links", hosts},
                        {"units", "GB/s (10^9 bytes a second); text output gives bits"}};
  if (r.slow) {
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& [a, b] : r.slow->links)
      pairs.push_back({a, b});
    out["slow"] = {{"culprit", culprit_name(r.slow->culprit)},
                   {"rank", r.slow->rank},
                   {"host", r.slow->host},
                   {"links", pairs},
                   {"slow_gbps", r.slow->slow_gbps},
                   {"others_gbps", r.slow->others_gbps},
                   {"measured", r.slow->measured},
                   {"text", r.slow->text}};
  } else {
    out["slow"] = nullptr;
  }
  return out;
}

std::string link_report_text(const LinkReport& r, size_t most_rows) {
  std::string out;
  if (r.links.empty() && r.world_size < 2) return "The run has one rank: there is no link between ranks.\n";
  if (r.links.empty()) {
    out += "No traffic between named pairs of ranks and no link test in this run";
    if (r.group_collective_bytes > 0)
      out += printf_string(" (its collectives moved %s MiB through the library, as a group)",
                           mib_text(r.group_collective_bytes).c_str());
    return out + ". Record with `train --measure-links` to measure each link.\n";
  }
  out += r.slow ? "Slow link: " + r.slow->text + ".\n"
                : std::string(r.measured ? "No link is markedly slower than the others (measured by --measure-links).\n"
                                         : "No link is markedly slower than the others in the traffic seen.\n");
  if (!std::isnan(r.ring_ceiling_gbps))
    out +=
        "Ring ceiling: " + link_rate_text(r.ring_ceiling_gbps) +
        " (the slowest measured link between neighbouring ranks; a ring allreduce's bus bandwidth cannot pass it).\n";
  if (!r.measured) out += "No link was measured: record with `train --measure-links` for each link's ceiling.\n";
  out += "\nPairs of ranks (moved: traffic outside the link test; achieved: its transfers of 64 KiB or more):\n";
  out += "   src   dst  hosts                              moved (MiB)  achieved        measured\n";
  size_t shown = 0;
  for (const RankLink& l : r.links) {
    if (most_rows > 0 && shown == most_rows) {
      out += printf_string("  ... and %zu more pairs (--all lists every one)\n", r.links.size() - shown);
      break;
    }
    ++shown;
    out += printf_string("  %4d  %4d  %-33s  %11s  %-14s  %s\n", l.src, l.dst,
                         host_pair(l.src_host, l.dst_host).c_str(), mib_text(l.bytes).c_str(),
                         link_rate_text(l.achieved_gbps()).c_str(), link_rate_text(l.measured_gbps).c_str());
  }
  if (!r.host_links.empty()) {
    out += "\nPairs of hosts:\n  hosts                              moved (MiB)  achieved        measured (best)\n";
    for (const HostLink& h : r.host_links)
      out += printf_string("  %-33s  %11s  %-14s  %s\n", host_pair(h.src_host, h.dst_host).c_str(),
                           mib_text(h.bytes).c_str(), link_rate_text(h.achieved_gbps).c_str(),
                           link_rate_text(h.measured_gbps).c_str());
  }
  if (r.group_collective_bytes > 0)
    out += printf_string(
        "\nCollectives through the library (MPI or NCCL) moved %s MiB as a group: the pairs their algorithm "
        "used are not recorded (stats' bandwidth gives their rate).\n",
        mib_text(r.group_collective_bytes).c_str());
  return out;
}

}  // namespace ddpscope::probes
