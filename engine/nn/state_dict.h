// State dicts and their file format: a magic line, the length of a JSON header (names,
// dtypes, shapes, byte offsets), the header, then the raw tensor bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "../tensor/tensor.h"

namespace ddpscope::nn {

using StateDict = std::vector<std::pair<std::string, Tensor>>;

void save_state_dict(const StateDict& state, const std::string& path);
StateDict load_state_dict_file(const std::string& path);

}  // namespace ddpscope::nn
