// SpanDetails: everything the timeline's details panel says about one selected span or
// mark, read from the loaded timeline (the same values as the span's row in the run
// file): what it is, when, where, what it carried, its parent and children on its lane,
// and the same collective on the other ranks.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "timeline_data.h"

namespace ddpscope::gui {

struct SpanDetails {
  SpanRef ref;
  std::string name, kind, thread;
  int rank = -1;
  int64_t begin_ns = 0, end_ns = 0;  // absolute run times
  int64_t start_ns = 0;              // since the run's first event
  int64_t duration_ns = 0;
  bool instant = false, unfinished = false;
  int64_t iteration = -1, bucket = -1, param = -1, bytes = -1, seq = -1, rowid = 0;
  std::string param_name;
  SpanRef parent;                        // invalid: none
  std::vector<SpanRef> children;         // on the same lane, one row down, by time
  std::vector<SpanRef> same_collective;  // the same op and sequence number on other ranks
  bool children_truncated = false;       // more children than kMaxChildren
  // A collective every rank's call of which is loaded: from the last arrival to its end
  // (-1: not known), and the ranks in it.
  int64_t transfer_ns = -1;
  int group_ranks = 0;
  bool every_arrival = true;  // false: the run holds some of the group's ranks (a lower bound)
  // The ring's measured ceiling (train --measure-links, link_matrix.h) the bus bandwidth is
  // read against; NaN: the links were not measured.
  double ceiling_gbps = std::numeric_limits<double>::quiet_NaN();

  static constexpr size_t kMaxChildren = 200;
  // "label: value" pairs for display, in reading order; absent values left out.
  std::vector<std::pair<std::string, std::string>> fields() const;
};

// A short one-line title for `ref`: "backward · rank 0 · 3.21 ms".
std::string spanTitle(const TimelineData& data, const SpanRef& ref);

// `with_relations` false leaves out parent, children and the other ranks' collective
// (the last is a scan of every span): for tooltips and status lines.
SpanDetails spanDetails(const TimelineData& data, const SpanRef& ref, bool with_relations = true);

}  // namespace ddpscope::gui
