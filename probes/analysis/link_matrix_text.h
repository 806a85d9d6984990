// The link report (link_matrix.h) as `links` prints it: JSON for scripts, and tables and a
// verdict a person reads.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "link_matrix.h"

namespace ddpscope::probes {

nlohmann::json link_report_json(const LinkReport& report);
// `most_rows`: pairs of ranks listed before "... and N more" (0: all).
std::string link_report_text(const LinkReport& report, size_t most_rows = 48);

}  // namespace ddpscope::probes
