#include "run_settings_diff.h"

#include <nlohmann/json.hpp>
#include <set>

namespace ddpscope::probes {

namespace {

// Options that say how a job was run, not what an iteration does; np and backend are
// compared as the run's world size and backend.
const std::set<std::string> kNotWork = {
    "iters",  "seed",    "log_every",    "out",    "hostfile", "master_addr", "master_port",       "python",
    "args",   "restart", "max_restarts", "counts", "progress", "np",          "backend",           "model",
    "script", "module",  "job",          "source", "data",     "force",       "measure_allreduce", "measure_links"};

nlohmann::json config_of(const RunRow& run) {
  try {
    nlohmann::json j = nlohmann::json::parse(run.config_json);
    if (j.is_object()) return j;
  } catch (const nlohmann::json::exception&) {
  }
  return nlohmann::json::object();
}

// Who recorded the run: a PyTorch script (traces, dumps or a live script) or ddpscope.
std::string recorder_of(const RunRow& run, const nlohmann::json& config) {
  const bool torch = config.contains("script") || config.value("job", "") == "torchrun" ||
                     run.backend.find("pytorch") != std::string::npos || run.model.rfind("torch", 0) == 0;
  return torch ? "PyTorch" : "ddpscope";
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::vector<SettingDifference> setting_differences(const RunRow& a, const RunRow& b) {
  std::vector<SettingDifference> out;
  const auto differ = [&](const std::string& name, const std::string& x, const std::string& y) {
    if (x != y) out.push_back({name, x, y});
  };
  const nlohmann::json ca = config_of(a), cb = config_of(b);
  const std::string ra = recorder_of(a, ca), rb = recorder_of(b, cb);
  differ("recorded by", ra, rb);
  differ("world size", std::to_string(a.world_size), std::to_string(b.world_size));
  differ("backend", a.backend, b.backend);
  differ("model", a.model, b.model);
  // Options both record (a PyTorch script's config and the trainer's share few names).
  for (const auto& [key, va] : ca.items()) {
    if (kNotWork.count(key) || !cb.contains(key)) continue;
    const nlohmann::json& vb = cb.at(key);
    if (!va.is_primitive() || !vb.is_primitive()) continue;
    if (va.is_number() && vb.is_number() && va.get<double>() == vb.get<double>()) continue;
    differ(key, value_text(va), value_text(vb));
  }
  return out;
}

std::string differences_text(const std::vector<SettingDifference>& differences) {
  std::string out;
  for (const auto& d : differences)
    out += (out.empty() ? "" : "; ") + d.name + " (A " + d.a + ", B " + d.b + ")";
  return out;
}

}  // namespace ddpscope::probes
