// `ddpscope-cli hang --json`: the hang report (hang_analysis.h) as one JSON document, for
// scripts: the verdict and findings, then each rank's position and what it waits for,
// then each process group's flight-recorder finding.
#pragma once

#include <nlohmann/json.hpp>

#include "hang_analysis.h"

namespace ddpscope::probes {

nlohmann::ordered_json hang_report_json(const HangReport& report);

}  // namespace ddpscope::probes
