// RangeSummary: what a dragged time range of the timeline holds, as Perfetto's area
// selection sums it: per (kind, name), how many spans touch the range, how much of
// their time lies inside it and the longest of them, over every rank and thread. Open
// (unfinished) ops count to the end of the run, under their name with " (unfinished)".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timeline_data.h"

namespace ddpscope::gui {

struct RangeRow {
  std::string name;
  probes::Kind kind = probes::Kind::Mark;
  int64_t count = 0;       // spans overlapping the range
  int64_t total_ns = 0;    // their time inside it, summed
  int ranks = 0;           // ranks with such a span in the range
  int64_t longest_ns = 0;  // the longest such span, whole (not only its part inside)
  SpanRef longest;         // ... and where it is
};

struct RangeSummary {
  int64_t begin_ns = 0, end_ns = 0;
  std::vector<RangeRow> rows;  // most time first
};

RangeSummary summarizeRange(const TimelineData& data, int64_t begin_ns, int64_t end_ns);

}  // namespace ddpscope::gui
