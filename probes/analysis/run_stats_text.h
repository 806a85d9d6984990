// `ddpscope-cli stats` as a person reads it: the run in a sentence, a table of each rank's
// means, the stragglers, what an error cut short, and (unless summary_only) a row per
// rank and iteration. Drawn from run_stats_json's document, so the two never disagree.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ddpscope::probes {

std::string run_stats_text(const nlohmann::ordered_json& stats, bool summary_only);

}  // namespace ddpscope::probes
