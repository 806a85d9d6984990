// `ddpscope-cli advise RUN`: the predicted iteration time and overlap at other bucket caps,
// from one recorded run (bucket_advice.h), as a table or, with --json, for scripts.
#pragma once

#include <string>
#include <vector>

namespace ddpscope::apps {

int run_advise(const std::string& path, const std::vector<double>& caps, int rank, bool json);

}  // namespace ddpscope::apps
