#include "module.h"

#include <algorithm>
#include <map>

#include "../autograd/grad_mode.h"

namespace ddpscope::nn {

Tensor Module::forward(const Tensor&) { throw DDPSCOPE_ERROR(type_name(), " has no single-tensor forward"); }

Tensor Module::register_parameter(const std::string& name, Tensor value) {
  DDPSCOPE_CHECK(value.defined(), type_name(), ": parameter '", name, "' is undefined");
  value.set_requires_grad(true);
  value.set_name(path_prefix() + name);
  parameters_.emplace_back(name, value);
  return value;
}

Tensor Module::register_buffer(const std::string& name, Tensor value) {
  value.set_name(path_prefix() + name);
  buffers_.emplace_back(name, value);
  return value;
}

void Module::attach_child(const std::string& name, std::shared_ptr<Module> child) {
  DDPSCOPE_CHECK(child != nullptr, type_name(), ": child module '", name, "' is null");
  DDPSCOPE_CHECK(child->parent_ == nullptr, type_name(), ": module '", name,
                 "' is already registered under another parent");
  child->parent_ = this;
  child->name_in_parent_ = name;
  child->rename_subtree();
  children_.emplace_back(name, std::move(child));
}

void Module::replace_child(const std::string& name, std::shared_ptr<Module> child) {
  const auto it = std::find_if(children_.begin(), children_.end(), [&](const auto& c) { return c.first == name; });
  DDPSCOPE_CHECK(it != children_.end(), type_name(), ": no child module named '", name, "' to replace");
  DDPSCOPE_CHECK(child != nullptr, type_name(), ": the module to put at '", name, "' is null");
  DDPSCOPE_CHECK(child->parent_ == nullptr, type_name(), ": the module to put at '", name,
                 "' is already registered under another parent");
  replace_child_member(name, child);
  it->second->parent_ = nullptr;
  it->second->name_in_parent_.clear();
  it->second->rename_subtree();
  child->parent_ = this;
  child->name_in_parent_ = name;
  child->rename_subtree();
  it->second = std::move(child);
}

void Module::replace_child_member(const std::string& name, const std::shared_ptr<Module>&) {
  throw DDPSCOPE_ERROR(type_name(), " keeps its child '", name,
                       "' in a member of its own and cannot have it replaced; build it with the module wanted "
                       "there instead");
}

std::string Module::path_prefix() const {
  return parent_ ? parent_->path_prefix() + name_in_parent_ + "." : std::string();
}

// Tensors carry their full path for graphs and errors; it changes when a subtree is
// attached to a parent, so the whole subtree is renamed then.
void Module::rename_subtree() {
  const std::string prefix = path_prefix();
  for (auto& [n, t] : parameters_)
    t.set_name(prefix + n);
  for (auto& [n, t] : buffers_)
    t.set_name(prefix + n);
  for (auto& [n, c] : children_)
    c->rename_subtree();
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [n, t] : parameters_)
    out.emplace_back(n, t);
  for (const auto& [cn, c] : children_) {
    for (auto& [n, t] : c->named_parameters())
      out.emplace_back(cn + "." + n, t);
  }
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters())
    out.push_back(t);
  return out;
}

void Module::to(Device device) {
  auto move = [&](const Tensor& t) {
    if (t.device() == device) return;
    const Tensor moved = t.to(device).contiguous();
    // Every handle shares the impl, so replacing its storage moves them all.
    TensorImpl* impl = t.impl();
    impl->storage = moved.storage();
    impl->strides = moved.strides();
    impl->offset = moved.storage_offset();
  };
  for (auto& [name, t] : named_parameters()) {
    t.set_grad(Tensor());
    move(t);
  }
  for (auto& [name, t] : named_buffers())
    move(t);
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [n, t] : buffers_)
    out.emplace_back(n, t);
  for (const auto& [cn, c] : children_) {
    for (auto& [n, t] : c->named_buffers())
      out.emplace_back(cn + "." + n, t);
  }
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const auto& [name, t] : named_parameters())
    n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_)
    c->train(on);
}

void Module::zero_grad(bool set_to_none) {
  for (auto& [n, t] : named_parameters()) {
    if (!t.grad().defined()) continue;
    if (set_to_none) {
      t.set_grad(Tensor());
    } else {
      t.grad().zero_();
    }
  }
}

StateDict Module::state_dict() const {
  StateDict out = named_parameters();
  for (auto& b : named_buffers())
    out.push_back(b);
  return out;
}

void Module::load_state_dict(const StateDict& state, bool strict) {
  // Validate everything first so a bad file leaves the model untouched.
  std::map<std::string, Tensor> given(state.begin(), state.end());
  std::string missing, mismatched;
  std::vector<std::pair<Tensor, Tensor>> copies;  // (target, source)
  for (auto& [name, target] : state_dict()) {
    auto it = given.find(name);
    if (it == given.end()) {
      missing += (missing.empty() ? "" : ", ") + name;
      continue;
    }
    if (it->second.sizes() != target.sizes()) {
      mismatched += (mismatched.empty() ? "" : ", ") + name + " (file " + it->second.describe() + ", model " +
                    target.describe() + ")";
    } else {
      copies.emplace_back(target, it->second);
    }
    given.erase(it);
  }
  std::string unexpected;
  for (auto& [name, t] : given)
    unexpected += (unexpected.empty() ? "" : ", ") + name;
  DDPSCOPE_CHECK(mismatched.empty(), "load_state_dict: shape mismatch for ", mismatched);
  DDPSCOPE_CHECK(!strict || (missing.empty() && unexpected.empty()), "load_state_dict: missing keys [", missing,
                 "], unexpected keys [", unexpected, "]; pass strict=false to load a partial state");
  autograd::NoGradGuard no_grad;
  for (auto& [target, source] : copies)
    target.copy_(source);
}

}  // namespace ddpscope::nn
