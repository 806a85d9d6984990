#include "dist_engine.h"

namespace ddpscope::dist_autograd {

void PassReport::merge(const PassReport& other) {
  ran.insert(other.ran.begin(), other.ran.end());
  for (const auto& [id, what] : other.not_run)
    not_run.emplace(id, what);
}

rpc::Value PassReport::to_value() const {
  rpc::ValueList ran_list, not_run_list;
  for (int64_t id : ran)
    ran_list.emplace_back(id);
  for (const auto& [id, what] : not_run) {
    rpc::ValueList entry;
    entry.emplace_back(id);
    entry.emplace_back(what);
    not_run_list.emplace_back(std::move(entry));
  }
  rpc::ValueList out;
  out.emplace_back(std::move(ran_list));
  out.emplace_back(std::move(not_run_list));
  return rpc::Value(std::move(out));
}

PassReport PassReport::from_value(const rpc::Value& v) {
  PassReport r;
  if (!v.is_list() || v.list().size() != 2) return r;
  for (const auto& id : v.list()[0].list())
    r.ran.insert(id.to_int());
  for (const auto& entry : v.list()[1].list())
    r.not_run.emplace(entry.list().at(0).to_int(), entry.list().at(1).str());
  return r;
}

std::vector<std::string> PassReport::never_run() const {
  std::vector<std::string> out;
  for (const auto& [id, what] : not_run) {
    if (!ran.count(id)) out.push_back(what);
  }
  return out;
}

}  // namespace ddpscope::dist_autograd
