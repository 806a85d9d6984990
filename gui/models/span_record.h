// What the run file holds of one span, field by field, for the timeline's Details: every
// column of its row (kind, name, times, iteration, bucket, parameter, bytes, peer,
// sequence, RPC ids, flags) and every argument its trace gave it when it was imported
// (a kernel's grid, block, stream, registers and occupancy; an op's input dims and
// types; a collective's sizes), as Perfetto and Nsight list them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ddpscope::gui {

struct SpanRecord {
  std::vector<std::pair<std::string, std::string>> fields;     // the row's columns that are set
  std::vector<std::pair<std::string, std::string>> arguments;  // the trace's args, in its order
  std::string error;                                           // why it could not be read ("" when it was)
};

// Reads span `span_id` of the run file at `path`; never throws.
SpanRecord readSpanRecord(const std::string& path, int64_t span_id);

}  // namespace ddpscope::gui
