// TrackLayout: where the timeline draws each rank's group and each lane, as Nsight and
// Perfetto lay out tracks: a header per rank (click to collapse it), then, while it is
// expanded, one track per thread with a row per nesting depth. A job on several hosts
// gets a header per host above its ranks (click to collapse them all), ranks grouped by
// host. Plain geometry in pixels, so tests check it without a window.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "timeline_data.h"

namespace ddpscope::gui {

struct TrackRow {
  enum class Type { Host, Group, Lane };
  Type type = Type::Group;
  int rank = 0;   // Group and Lane rows (-1: a Host row)
  int lane = -1;  // into TimelineData::lanes (Lane rows)
  int y = 0, height = 0;
  bool collapsed = false;  // Host and Group rows
  std::string host;        // Host rows: the host; ranks: how many it holds in `ranks`
  int ranks = 0;
};

// Where each rank ran and which hosts are collapsed; host headers appear when the ranks
// span two hosts or more.
struct TrackHosts {
  std::map<int, std::string> host_of;
  std::set<std::string> collapsed;
};

struct TrackLayout {
  static constexpr int kGroupHeight = 20;
  static constexpr int kRowHeight = 18;
  static constexpr int kLanePad = 3;  // above the first row and below the last
  // Under the rows of a lane with instants or exposed communication: ticks and the band
  // are drawn there, never over a span.
  static constexpr int kStripHeight = 8;

  std::vector<TrackRow> rows;
  std::vector<int> lane_row;   // per lane: its index in `rows`, -1 while its rank is collapsed
  std::vector<int> group_row;  // per lane: its rank's header in `rows` (its host's while that is collapsed)
  int bottom = 0;              // below the last track

  // The top of `row` (a nesting depth) in `lane`'s track; the lane must be shown.
  int rowTop(int lane, int row) const { return rows[lane_row[lane]].y + kLanePad + row * kRowHeight; }
  // The top of `lane`'s strip (its ticks and exposed band); the lane must be shown.
  int stripTop(int lane) const {
    const TrackRow& r = rows[lane_row[lane]];
    return r.y + r.height - kLanePad - kStripHeight;
  }
  // Where flows attach to a lane: its first row, or its rank's header while collapsed.
  double anchorY(int lane) const;
  // The track under y: its index in `rows`, -1 for none.
  int rowAt(int y) const;
  // The lane row (depth) under y in track `index`: -1 outside its rows.
  int depthAt(int index, int y) const;
};

TrackLayout layoutTracks(const TimelineData& data, const std::set<int>& collapsed_ranks, int top,
                         const TrackHosts& hosts = {});

}  // namespace ddpscope::gui
