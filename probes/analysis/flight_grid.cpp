#include "flight_grid.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "ddpscope/error.h"

namespace ddpscope::probes {

FlightGrid flight_grid(const FlightData& data, const GroupFinding& finding, int before, int after) {
  FlightGrid g;
  g.group = finding.group;
  g.ranks = finding.members;
  // A send/recv finding is drawn around the collective its ops came after.
  int64_t focus = finding.seq;
  if (finding.p2p) {
    focus = -1;
    for (const auto& [rank, call] : finding.calls)
      focus = std::max(focus, call.last_collective_seq);
    if (focus < 0) return g;
  }
  g.focus_seq = focus;
  int64_t highest = -1, lowest = focus;
  for (const auto& [rank, rows] : data.by_rank)
    for (const CollectiveRow& r : rows)
      if (r.pg_name == finding.group && !r.is_p2p()) {
        highest = std::max(highest, r.collective_seq);
        lowest = std::min(lowest, r.collective_seq);
      }
  const int64_t lo = std::max(lowest, focus - before), hi = std::min(highest, focus + after);
  for (int64_t s = lo; s <= hi; ++s)
    g.seqs.push_back(s);
  for (int rank : g.ranks) {
    std::vector<const CollectiveRow*> row(g.seqs.size(), nullptr);
    if (const auto it = data.by_rank.find(rank); it != data.by_rank.end()) {
      for (const CollectiveRow& r : it->second) {
        if (r.pg_name != finding.group || r.is_p2p() || r.collective_seq < lo || r.collective_seq > hi) continue;
        row[static_cast<size_t>(r.collective_seq - lo)] = &r;
      }
    }
    g.cells.push_back(std::move(row));
  }
  return g;
}

std::string flight_grid_text(const FlightGrid& g) {
  if (g.seqs.empty()) return {};
  std::string out = detail::concat("group '", g.group, "', collectives #", g.seqs.front(), "..#", g.seqs.back(),
                                   " (C completed, S started, s scheduled, - not called or not held)\n");
  // Columns as wide as the widest rank or number (at least 7), so that none runs into the next.
  size_t width = 7;
  for (int64_t s : g.seqs)
    width = std::max(width, std::to_string(s).size() + 3);  // ">#" and a space
  for (int r : g.ranks)
    width = std::max(width, std::to_string(r).size() + 1);
  const auto column = [width](const std::string& text) { return text + std::string(width - text.size(), ' '); };
  out += column("rank");
  for (int64_t s : g.seqs)
    out += column((s == g.focus_seq ? ">#" : "#") + std::to_string(s));
  out += "\n";
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    out += column(std::to_string(g.ranks[i]));
    const CollectiveRow* focus = nullptr;
    const CollectiveRow* last = nullptr;
    for (size_t j = 0; j < g.seqs.size(); ++j) {
      const CollectiveRow* c = g.cell(i, j);
      const int state = c ? c->state_order() : -1;
      out += column(state == 2 ? "C" : state == 1 ? "S" : state == 0 ? "s" : "-");
      if (c && g.seqs[j] == g.focus_seq) focus = c;
      if (c) last = c;
    }
    if (focus) {
      out += call_text(*focus);
      if (!focus->phase.empty()) out += detail::concat(" (", focus->phase, ", iteration ", focus->iteration, ")");
    } else if (last) {
      out += detail::concat("last: #", last->collective_seq, " ", call_text(*last));
    }
    while (!out.empty() && out.back() == ' ')
      out.pop_back();
    out += "\n";
  }
  return out;
}

}  // namespace ddpscope::probes
