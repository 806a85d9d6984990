// LinkGrid: the run's links (link_matrix.h) as a square grid for the Links tab's heat map,
// one row per sender and one column per receiver, ranks or hosts, valued by the measured
// rate, the achieved rate or the bytes moved. Plain data; the view paints it.
//
// With more ranks than pixels a pixel covers a block of cells and shows its worst: the
// slowest rate, or the most bytes, so one slow link among a thousand ranks still shows.
// Past kMaxSide ranks (or a damaged file naming a rank past any job's) a row is a block of
// ranks, valued by its worst link, so the grid stays within kMaxSide^2 cells (64 MiB).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "link_matrix.h"

namespace ddpscope::gui {

enum class LinkMeasure { Measured, Achieved, Bytes };
enum class LinkLevel { Ranks, Hosts };

// The measure's name as the page's chooser shows it ("measured rate").
const char* linkMeasureLabel(LinkMeasure m);

struct LinkGrid {
  static constexpr size_t kMaxSide = 4096;
  LinkMeasure measure = LinkMeasure::Measured;
  LinkLevel level = LinkLevel::Ranks;
  std::vector<std::string> labels;  // "3" (a rank), "0-7" (a block of ranks) or a host's name
  size_t ranks_per_row = 1;         // LinkLevel::Ranks: the ranks a row (and column) holds
  std::vector<std::string> hosts;   // each rank's host (LinkLevel::Ranks); empty for hosts
  std::vector<float> values;        // size() x size(), row = sender; NaN: none. GB/s or bytes
  double low = 0, high = 0;         // the finite values' range (0, 0: none)
  // Each cell's badness as the map draws it: 0 none, 1 + 254 x badness otherwise, so the
  // worst of a block is its largest byte (a map is rebuilt from these without a logarithm).
  std::vector<uint8_t> shades;
  size_t size() const { return labels.size(); }
  float at(size_t src, size_t dst) const { return values[src * size() + dst]; }
  bool isRate() const { return measure != LinkMeasure::Bytes; }
  // How much a value calls for a look, 0 .. 1: rates inverted on a log scale (the slowest
  // 1), bytes on a linear one (the most 1).
  double badness(float value) const;
  // The worst value of the cells [r0, r1) x [c0, c1): the slowest rate, the most bytes.
  float pooled(size_t r0, size_t r1, size_t c0, size_t c1) const;
  uint8_t shade(size_t src, size_t dst) const { return shades[src * size() + dst]; }
};

// `world_size`: the ranks to lay out (the run's, or more where links name higher ranks).
LinkGrid makeLinkGrid(const probes::LinkReport& report, LinkMeasure measure, LinkLevel level, int world_size);

// A cell as the tooltip says it: "rank 2 (ddps-h2) → rank 3 (ddps-h3): measured 192 Mbit/s,
// achieved 196 Mbit/s, 18.7 MiB moved".
std::string linkCellText(const probes::LinkReport& report, const LinkGrid& grid, size_t src, size_t dst);

// A value as the legend says it: "192 Mbit/s" or "18.7 MiB".
std::string linkValueText(const LinkGrid& grid, double value);

}  // namespace ddpscope::gui
