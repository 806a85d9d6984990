// The order a lesson shows its steps in: happens-before first, clocks second.
//
// Steps come from several ranks, each stamped by its own clock. Clocks of different
// ranks disagree (by the offset the collector could not measure away, up to
// milliseconds across hosts), and a span can end when something arrives rather than
// when it left: replayed by time alone, a block can arrive before it was sent. Here each
// step follows its rank's earlier steps and the steps it waited for (a message's send,
// the block a neighbour sent); among the steps whose causes have all been shown, the
// earliest by clock goes next (Lamport's happens-before, with the clocks only breaking
// ties that causality leaves free). Vector clocks then tell which consecutive steps are
// concurrent: neither could have waited for the other. Plain data, no Qt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddpscope::gui {

struct CausalStep {
  int rank = 0;
  int64_t t_ns = 0;            // the rank's clock
  std::vector<size_t> causes;  // steps (indexes) it waited for on other ranks
};

struct CausalOrder {
  std::vector<size_t> order;  // the steps' indexes, in the order to show them
  // For each position of `order`: the step there is concurrent with the one before it.
  std::vector<bool> concurrent_with_previous;
  // Steps whose causes formed a cycle (damaged data): shown after the rest, by clock.
  size_t cyclic = 0;
};

// A rank's own steps stay in their clock order (ties: by index).
CausalOrder causalOrder(const std::vector<CausalStep>& steps);

}  // namespace ddpscope::gui
