#include "link_grid.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ddpscope/printf_string.h"

namespace ddpscope::gui {
namespace {

constexpr float kNone = std::numeric_limits<float>::quiet_NaN();

double rankValue(const probes::RankLink& l, LinkMeasure m) {
  switch (m) {
    case LinkMeasure::Measured: return l.measured_gbps;
    case LinkMeasure::Achieved: return l.achieved_gbps();
    default: return l.bytes > 0 ? static_cast<double>(l.bytes) : std::nan("");
  }
}

double hostValue(const probes::HostLink& h, LinkMeasure m) {
  switch (m) {
    case LinkMeasure::Measured: return h.measured_gbps;
    case LinkMeasure::Achieved: return h.achieved_gbps;
    default: return h.bytes > 0 ? static_cast<double>(h.bytes) : std::nan("");
  }
}

void setRange(LinkGrid& g) {
  bool any = false;
  for (float v : g.values) {
    if (std::isnan(v)) continue;
    g.low = any ? std::min(g.low, static_cast<double>(v)) : v;
    g.high = any ? std::max(g.high, static_cast<double>(v)) : v;
    any = true;
  }
}

std::string mibText(double bytes) { return printf_string("%.1f MiB", bytes / (1 << 20)); }

}  // namespace

const char* linkMeasureLabel(LinkMeasure m) {
  switch (m) {
    case LinkMeasure::Measured: return "measured rate (--measure-links)";
    case LinkMeasure::Achieved: return "achieved rate (the job's traffic)";
    default: return "bytes moved";
  }
}

double LinkGrid::badness(float value) const {
  if (std::isnan(value) || high <= low) return 0;  // nothing to compare it with
  if (!isRate()) return (value - low) / (high - low);
  const double span = std::log(high) - std::log(std::max(low, 1e-12));
  return std::clamp((std::log(high) - std::log(std::max<double>(value, 1e-12))) / span, 0.0, 1.0);
}

float LinkGrid::pooled(size_t r0, size_t r1, size_t c0, size_t c1) const {
  float worst = kNone;
  for (size_t r = r0; r < r1; ++r) {
    const float* row = &values[r * size()];
    for (size_t c = c0; c < c1; ++c) {
      const float v = row[c];
      if (std::isnan(v)) continue;
      if (std::isnan(worst) || (isRate() ? v < worst : v > worst)) worst = v;
    }
  }
  return worst;
}

LinkGrid makeLinkGrid(const probes::LinkReport& report, LinkMeasure measure, LinkLevel level, int world_size) {
  LinkGrid g;
  g.measure = measure;
  g.level = level;
  if (level == LinkLevel::Ranks) {
    int64_t n = std::max(world_size, 0);
    for (const auto& l : report.links)
      n = std::max<int64_t>({n, int64_t{l.src} + 1, int64_t{l.dst} + 1});
    const auto ranks = static_cast<size_t>(n);
    g.ranks_per_row = std::max<size_t>(1, (ranks + LinkGrid::kMaxSide - 1) / LinkGrid::kMaxSide);
    const size_t side = (ranks + g.ranks_per_row - 1) / g.ranks_per_row;
    g.hosts.assign(side, std::string());
    for (size_t r = 0; r < side; ++r) {
      const size_t first = r * g.ranks_per_row, last = std::min(ranks, first + g.ranks_per_row) - 1;
      g.labels.push_back(first == last ? std::to_string(first) : std::to_string(first) + "-" + std::to_string(last));
    }
    g.values.assign(side * side, kNone);
    for (const auto& l : report.links) {
      const size_t src = static_cast<size_t>(l.src) / g.ranks_per_row,
                   dst = static_cast<size_t>(l.dst) / g.ranks_per_row;
      g.hosts[src] = g.ranks_per_row == 1 ? l.src_host : std::string();
      g.hosts[dst] = g.ranks_per_row == 1 ? l.dst_host : std::string();
      float& cell = g.values[src * side + dst];
      const auto v = static_cast<float>(rankValue(l, measure));
      if (!std::isnan(v) && (std::isnan(cell) || (g.isRate() ? v < cell : v > cell))) cell = v;  // the block's worst
    }
  } else {
    std::map<std::string, size_t> index;
    for (const auto& h : report.host_links)
      index.emplace(h.src_host, 0), index.emplace(h.dst_host, 0);
    for (auto& [host, i] : index) {
      i = g.labels.size();
      g.labels.push_back(host);
    }
    g.values.assign(g.size() * g.size(), kNone);
    for (const auto& h : report.host_links)
      g.values[index[h.src_host] * g.size() + index[h.dst_host]] = static_cast<float>(hostValue(h, measure));
  }
  setRange(g);
  g.shades.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); ++i)
    g.shades[i] = std::isnan(g.values[i]) ? 0 : static_cast<uint8_t>(1 + std::lround(g.badness(g.values[i]) * 254));
  return g;
}

std::string linkValueText(const LinkGrid& grid, double value) {
  if (std::isnan(value)) return "-";
  return grid.isRate() ? probes::link_rate_text(value) : mibText(value);
}

std::string linkCellText(const probes::LinkReport& report, const LinkGrid& grid, size_t src, size_t dst) {
  const auto name = [&](size_t i) {
    if (grid.level == LinkLevel::Hosts) return "host " + grid.labels[i];
    const std::string& host = grid.hosts[i];
    return std::string(grid.ranks_per_row > 1 ? "ranks " : "rank ") + grid.labels[i] +
           (host.empty() ? "" : " (" + host + ")");
  };
  std::string out = name(src) + " → " + name(dst) + ": ";
  double measured = std::nan(""), achieved = std::nan(""), bytes = 0;
  bool found = false;
  if (grid.level == LinkLevel::Ranks && grid.ranks_per_row > 1) {
    return out + "the worst of its links, " + linkValueText(grid, grid.at(src, dst)) + " (a row holds " +
           std::to_string(grid.ranks_per_row) + " ranks)";
  }
  if (grid.level == LinkLevel::Ranks) {
    for (const auto& l : report.links) {
      if (static_cast<size_t>(l.src) != src || static_cast<size_t>(l.dst) != dst) continue;
      measured = l.measured_gbps, achieved = l.achieved_gbps(), bytes = static_cast<double>(l.bytes), found = true;
    }
  } else {
    for (const auto& h : report.host_links) {
      if (h.src_host != grid.labels[src] || h.dst_host != grid.labels[dst]) continue;
      measured = h.measured_gbps, achieved = h.achieved_gbps, bytes = static_cast<double>(h.bytes), found = true;
    }
  }
  if (!found) return out + (src == dst ? "itself" : "no traffic and not measured");
  out += "measured " + probes::link_rate_text(measured) + ", achieved " + probes::link_rate_text(achieved) + ", " +
         mibText(bytes) + " moved";
  return out;
}

}  // namespace ddpscope::gui
