#include "track_layout.h"

#include <algorithm>

namespace ddpscope::gui {

namespace {

// The host `rank` ran on; empty when the run does not say.
std::string hostOf(const TrackHosts& hosts, int rank) {
  const auto it = hosts.host_of.find(rank);
  return it == hosts.host_of.end() ? std::string() : it->second;
}

// Hosts in the order of their lowest rank (node-2 before node-10), lanes as before within.
void sortLanesByHost(std::vector<size_t>& order, const TimelineData& data, const TrackHosts& hosts) {
  std::map<std::string, int> lowest;
  for (const TimelineLane& lane : data.lanes) {
    const auto [it, fresh] = lowest.try_emplace(hostOf(hosts, lane.rank), lane.rank);
    if (!fresh) it->second = std::min(it->second, lane.rank);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return lowest[hostOf(hosts, data.lanes[a].rank)] < lowest[hostOf(hosts, data.lanes[b].rank)];
  });
}

// How many distinct ranks ran on each host (a rank has a lane per thread).
std::map<std::string, int> ranksPerHost(const TimelineData& data, const TrackHosts& hosts) {
  std::map<std::string, int> ranks_on;
  std::set<int> seen;
  for (const TimelineLane& lane : data.lanes)
    if (seen.insert(lane.rank).second) ++ranks_on[hostOf(hosts, lane.rank)];
  return ranks_on;
}

}  // namespace

TrackLayout layoutTracks(const TimelineData& data, const std::set<int>& collapsed_ranks, int top,
                         const TrackHosts& hosts) {
  TrackLayout t;
  t.lane_row.assign(data.lanes.size(), -1);
  t.group_row.assign(data.lanes.size(), -1);
  // Lanes in the order drawn: by host when there are several (ranks of a host together,
  // whatever mpirun's placement), else as the data has them (by rank).
  const auto host_of = [&](int rank) { return hostOf(hosts, rank); };
  std::set<std::string> distinct;
  for (const TimelineLane& lane : data.lanes)
    distinct.insert(host_of(lane.rank));
  const bool by_host = distinct.size() > 1;
  std::vector<size_t> order(data.lanes.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::map<std::string, int> ranks_on;
  if (by_host) {
    sortLanesByHost(order, data, hosts);
    ranks_on = ranksPerHost(data, hosts);
  }
  int y = top;
  int group = -1, host_row = -1;
  for (size_t i : order) {
    const TimelineLane& lane = data.lanes[i];
    if (by_host && (host_row < 0 || t.rows[static_cast<size_t>(host_row)].host != host_of(lane.rank))) {
      TrackRow header;
      header.type = TrackRow::Type::Host;
      header.rank = -1;
      header.host = host_of(lane.rank);
      header.ranks = ranks_on[header.host];
      header.y = y;
      header.height = TrackLayout::kGroupHeight;
      header.collapsed = hosts.collapsed.count(header.host) > 0;
      host_row = static_cast<int>(t.rows.size());
      group = -1;
      t.rows.push_back(header);
      y += header.height;
    }
    if (by_host && t.rows[static_cast<size_t>(host_row)].collapsed) {
      t.group_row[i] = host_row;  // flows attach to the host's header
      continue;
    }
    if (group < 0 || t.rows[static_cast<size_t>(group)].rank != lane.rank) {
      TrackRow header;
      header.type = TrackRow::Type::Group;
      header.rank = lane.rank;
      header.y = y;
      header.height = TrackLayout::kGroupHeight;
      header.collapsed = collapsed_ranks.count(lane.rank) > 0;
      group = static_cast<int>(t.rows.size());
      t.rows.push_back(header);
      y += header.height;
    }
    t.group_row[i] = group;
    if (t.rows[static_cast<size_t>(group)].collapsed) continue;
    TrackRow track;
    track.type = TrackRow::Type::Lane;
    track.rank = lane.rank;
    track.lane = static_cast<int>(i);
    track.y = y;
    // Every lane keeps a strip, so rows line up across lanes and the band has room.
    track.height =
        2 * TrackLayout::kLanePad + std::max(1, lane.rows) * TrackLayout::kRowHeight + TrackLayout::kStripHeight;
    t.lane_row[i] = static_cast<int>(t.rows.size());
    t.rows.push_back(track);
    y += track.height;
  }
  t.bottom = y;
  return t;
}

double TrackLayout::anchorY(int lane) const {
  if (lane < 0 || static_cast<size_t>(lane) >= lane_row.size()) return 0;
  if (lane_row[lane] >= 0) return rowTop(lane, 0) + kRowHeight / 2.0;
  const TrackRow& g = rows[group_row[lane]];
  return g.y + g.height / 2.0;
}

int TrackLayout::rowAt(int y) const {
  const auto it = std::upper_bound(rows.begin(), rows.end(), y, [](int v, const TrackRow& r) { return v < r.y; });
  if (it == rows.begin()) return -1;
  const auto& r = *std::prev(it);
  return y < r.y + r.height ? static_cast<int>(std::prev(it) - rows.begin()) : -1;
}

int TrackLayout::depthAt(int index, int y) const {
  if (index < 0 || static_cast<size_t>(index) >= rows.size()) return -1;
  const TrackRow& r = rows[static_cast<size_t>(index)];
  if (r.type != TrackRow::Type::Lane) return -1;
  const int dy = y - r.y - kLanePad;
  if (dy < 0 || dy >= r.height - 2 * kLanePad) return -1;
  return dy / kRowHeight;
}

}  // namespace ddpscope::gui
