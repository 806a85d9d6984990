// What differs between two runs' settings, said before any comparison of their times: a
// slower B whose model is also wider is not a slower network. Compares the world size,
// the backend, the model, who recorded the run (ddpscope's own trainer or a PyTorch
// script), and every option both configs record, except those that do not change an
// iteration's work (iteration count, seed, logging, paths and ports).
#pragma once

#include <string>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::probes {

struct SettingDifference {
  std::string name;  // "width", "world size", "recorded by"
  std::string a, b;  // as the user would write them: 256, 0.25, transformer
};

std::vector<SettingDifference> setting_differences(const RunRow& a, const RunRow& b);

// "model (A transformer, B mlp); width (A 64, B 256)": the differences in one line.
std::string differences_text(const std::vector<SettingDifference>& differences);

}  // namespace ddpscope::probes
