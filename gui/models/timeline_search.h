// Timeline search (Ctrl+F or /): spans and marks whose name contains the text, any case;
// "bucket 3" finds bucket 3's spans and marks; a parameter's name finds its gradient's
// marks and copies. Results by time, for next and previous.
#pragma once

#include <string>
#include <vector>

#include "timeline_data.h"

namespace ddpscope::gui {

struct SearchResults {
  std::vector<SpanRef> matches;  // by begin time
  bool truncated = false;        // stopped at kMaxMatches
  static constexpr size_t kMaxMatches = 1'000'000;
};

SearchResults searchTimeline(const TimelineData& data, const std::string& query);

}  // namespace ddpscope::gui
