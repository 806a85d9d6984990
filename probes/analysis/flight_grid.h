// The collectives around a group's first mismatch as a grid: one row per member rank, one
// column per collective sequence number, each cell that rank's record of that collective
// (or none: never called, or no longer held). The Hang view draws it; `ddpscope-cli hang`
// prints it.
#pragma once

#include <string>
#include <vector>

#include "flight_analysis.h"

namespace ddpscope::probes {

struct FlightGrid {
  std::string group;
  std::vector<int> ranks;                                // rows
  std::vector<int64_t> seqs;                             // columns, ascending
  int64_t focus_seq = -1;                                // the finding's collective
  std::vector<std::vector<const CollectiveRow*>> cells;  // [row][column]; null: no record
  const CollectiveRow* cell(size_t row, size_t column) const { return cells[row][column]; }
};

// `before` and `after` collectives either side of the finding's (the records must outlive
// the grid).
FlightGrid flight_grid(const FlightData& data, const GroupFinding& finding, int before = 4, int after = 2);

// The grid as text: a legend line, a header of sequence numbers, a row per rank of state
// letters (C completed, S started, s scheduled, - none) and that rank's call at the focus.
std::string flight_grid_text(const FlightGrid& grid);

}  // namespace ddpscope::probes
