// The flight analysis of point-to-point ops (send and recv) of one group: each direction's
// sends paired with its receives, and the first pair or lone end that does not match.
#pragma once

#include <string>

#include "flight_analysis.h"

namespace ddpscope::probes {

GroupFinding judge_p2p(const std::string& name, const FlightData& data);

}  // namespace ddpscope::probes
