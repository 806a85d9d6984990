#include "optimizer.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "../autograd/grad_mode.h"
#include "../tensor/kernels.h"

namespace ddpscope::optim {
namespace {
void check_param(const Tensor& p, const Tensor& g) {
  DDPSCOPE_CHECK(p.is_contiguous() && g.is_contiguous() && g.sizes() == p.sizes() && g.dtype() == p.dtype(),
                 "optimizer: parameter ", p.name(), " ", p.describe(), " and its gradient ", g.describe(),
                 " must be contiguous with equal shape and dtype");
  DDPSCOPE_CHECK(g.device() == p.device(), "optimizer: parameter ", p.name(), " is on ", p.device().str(),
                 " but its gradient on ", g.device().str());
}

// SGD on a GPU parameter: PyTorch's update (the same as the CPU loop below) as a few
// device kernels, each one pass over the parameter.
void sgd_on_device(const Tensor& p, const Tensor& g, Tensor& buf, bool first, const SgdOptions& o) {
  Tensor d = g;
  if (o.weight_decay != 0) {
    d = Tensor::empty(g.sizes(), g.dtype(), g.device());
    kernels::copy(d, g);
    kernels::add_(d, p, o.weight_decay);
  }
  if (o.momentum == 0) {
    kernels::add_(p, d, -o.lr);
    return;
  }
  if (first) {
    kernels::copy(buf, d);
  } else {
    kernels::scale_(buf, o.momentum);
    kernels::add_(buf, d, 1.0 - o.dampening);
  }
  if (!o.nesterov) {
    kernels::add_(p, buf, -o.lr);
    return;
  }
  kernels::add_(p, d, -o.lr);
  kernels::add_(p, buf, -o.lr * o.momentum);
}
}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
  for (size_t i = 0; i < params_.size(); ++i) {
    DDPSCOPE_CHECK(params_[i].defined() && params_[i].requires_grad() && params_[i].is_leaf(), "optimizer: parameter ",
                   i, " (", params_[i].name(), ") must be a leaf tensor that requires grad");
  }
}

void Optimizer::step() {
  std::vector<size_t> all(params_.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  step_params(all);
}

void zero_grad(const std::vector<Tensor>& params, bool set_to_none) {
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    if (set_to_none)
      p.set_grad(Tensor());
    else
      p.grad().zero_();
  }
}

void Optimizer::zero_grad(bool set_to_none) { optim::zero_grad(params_, set_to_none); }

std::string state_key(size_t index, const std::string& field) { return "state." + std::to_string(index) + "." + field; }

std::optional<std::pair<size_t, std::string>> parse_state_key(const std::string& key) {
  const size_t dot = key.find('.', 6);
  if (key.rfind("state.", 0) != 0 || dot == std::string::npos || dot == 6) return std::nullopt;
  size_t index = 0, used = 0;
  try {
    index = std::stoul(key.substr(6, dot - 6), &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != dot - 6) return std::nullopt;
  return std::make_pair(index, key.substr(dot + 1));
}

Tensor Optimizer::get_state(size_t, const std::string&) const { return Tensor(); }

void Optimizer::set_state(size_t, const std::string& field, Tensor) {
  throw DDPSCOPE_ERROR("optimizer: this optimizer keeps no state '", field, "'");
}

nn::StateDict Optimizer::state_dict() const {
  nn::StateDict out;
  const auto fields = state_fields();
  for (size_t i = 0; i < params_.size(); ++i) {
    for (const std::string& f : fields) {
      Tensor t = get_state(i, f);
      if (t.defined()) out.emplace_back(state_key(i, f), t.clone());
    }
  }
  return out;
}

void Optimizer::load_state_dict(const nn::StateDict& state) {
  const auto fields = state_fields();
  struct Entry {
    size_t index;
    std::string field;
    const Tensor* value;
  };
  std::vector<Entry> entries;
  for (const auto& [key, value] : state) {
    const auto parsed = parse_state_key(key);
    DDPSCOPE_CHECK(parsed, "optimizer state: entry '", key, "' is not of the form state.<index>.<field>");
    const auto& [index, field] = *parsed;
    DDPSCOPE_CHECK(index < params_.size(), "optimizer state: entry '", key, "' names parameter ", index, ", but this ",
                   "optimizer has ", params_.size(), " parameters");
    DDPSCOPE_CHECK(std::find(fields.begin(), fields.end(), field) != fields.end(), "optimizer state: entry '", key,
                   "' is not state this optimizer keeps (is the state dict from another kind of optimizer?)");
    DDPSCOPE_CHECK(value.defined(), "optimizer state: entry '", key, "' holds no tensor");
    const Tensor& p = params_[index];
    if (field == "step") {
      DDPSCOPE_CHECK(value.numel() == 1, "optimizer state: '", key, "' must be one number, got ", value.describe());
    } else {
      DDPSCOPE_CHECK(value.sizes() == p.sizes() && value.dtype() == p.dtype(), "optimizer state: '", key, "' is ",
                     value.describe(), " but parameter ", index, " (", p.name(), ") is ", p.describe());
    }
    entries.push_back({index, field, &value});
  }
  for (size_t i = 0; i < params_.size(); ++i)
    for (const std::string& f : fields)
      set_state(i, f, Tensor());
  for (const Entry& e : entries) {
    Tensor copy =
        Tensor::empty(e.value->sizes(), e.value->dtype(), e.field == "step" ? Device() : params_[e.index].device());
    copy.copy_(*e.value);
    set_state(e.index, e.field, copy);
  }
}

namespace {
int64_t defined_bytes(const std::vector<Tensor>& tensors) {
  int64_t bytes = 0;
  for (const Tensor& t : tensors)
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  return bytes;
}
}  // namespace

int64_t SGD::state_bytes() const { return defined_bytes(momentum_buffers_); }

int64_t Adam::state_bytes() const { return defined_bytes(exp_avg_) + defined_bytes(exp_avg_sq_); }

Tensor SGD::get_state(size_t index, const std::string&) const { return momentum_buffers_.at(index); }

void SGD::set_state(size_t index, const std::string&, Tensor value) { momentum_buffers_.at(index) = std::move(value); }

Tensor Adam::get_state(size_t index, const std::string& field) const {
  if (field == "step") return steps_.at(index) > 0 ? Tensor::scalar(steps_[index], DType::I64) : Tensor();
  return field == "exp_avg" ? exp_avg_.at(index) : exp_avg_sq_.at(index);
}

void Adam::set_state(size_t index, const std::string& field, Tensor value) {
  if (field == "step") {
    steps_.at(index) = value.defined() ? static_cast<int64_t>(value.item<double>()) : 0;
  } else if (field == "exp_avg") {
    exp_avg_.at(index) = std::move(value);
  } else {
    exp_avg_sq_.at(index) = std::move(value);
  }
}

SGD::SGD(std::vector<Tensor> params, SgdOptions options)
    : Optimizer(std::move(params)), options_(options), momentum_buffers_(params_.size()) {
  DDPSCOPE_CHECK(options.lr >= 0, "SGD: learning rate must be >= 0, got ", options.lr);
  DDPSCOPE_CHECK(!options.nesterov || (options.momentum > 0 && options.dampening == 0),
                 "SGD: nesterov needs momentum > 0 and dampening 0");
}

void SGD::step_params(std::span<const size_t> indices) {
  autograd::NoGradGuard no_grad;
  const SgdOptions o = options_;
  for (const size_t i : indices) {
    DDPSCOPE_CHECK(i < params_.size(), "SGD: parameter index ", i, " out of range (", params_.size(), " parameters)");
    const Tensor& p = params_[i];
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    check_param(p, g);
    // The first step's buffer is the (decayed) gradient itself, as in PyTorch.
    const bool first = o.momentum != 0 && !momentum_buffers_[i].defined();
    if (first) momentum_buffers_[i] = Tensor::empty(p.sizes(), p.dtype(), p.device());
    if (p.device().is_cuda()) {
      sgd_on_device(p, g, momentum_buffers_[i], first, o);
      p.bump_version();
      continue;
    }
    dispatch_compute(p.dtype(), "SGD", [&]<typename T>() {
      T* w = p.data<T>();
      const T* gr = g.data<T>();
      T* buf = o.momentum != 0 ? momentum_buffers_[i].data<T>() : nullptr;
      const T lr = static_cast<T>(o.lr), wd = static_cast<T>(o.weight_decay), mom = static_cast<T>(o.momentum),
              damp = static_cast<T>(1.0 - o.dampening);
      const int64_t n = p.numel();
      if (!buf) {
        for (int64_t j = 0; j < n; ++j)
          w[j] -= lr * (gr[j] + wd * w[j]);
        return;
      }
      for (int64_t j = 0; j < n; ++j) {
        const T d = gr[j] + wd * w[j];
        buf[j] = first ? d : mom * buf[j] + damp * d;
        w[j] -= lr * (o.nesterov ? d + mom * buf[j] : buf[j]);
      }
    });
    p.bump_version();
  }
}

Adam::Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled)
    : Optimizer(std::move(params)),
      options_(options),
      decoupled_(decoupled),
      steps_(params_.size(), 0),
      exp_avg_(params_.size()),
      exp_avg_sq_(params_.size()) {
  DDPSCOPE_CHECK(options.lr >= 0 && options.eps >= 0, "Adam: lr and eps must be >= 0");
  DDPSCOPE_CHECK(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
                 "Adam: betas must be in [0, 1), got ", options.beta1, ", ", options.beta2);
}

void Adam::step_params(std::span<const size_t> indices) {
  autograd::NoGradGuard no_grad;
  const AdamOptions o = options_;
  for (const size_t i : indices) {
    DDPSCOPE_CHECK(i < params_.size(), "Adam: parameter index ", i, " out of range (", params_.size(), " parameters)");
    const Tensor& p = params_[i];
    const Tensor& g = p.grad();
    if (!g.defined()) continue;
    check_param(p, g);
    DDPSCOPE_CHECK(p.device().is_cpu(), "Adam: parameter ", p.name(), " is on ", p.device().str(),
                   "; Adam and AdamW update CPU parameters (SGD updates GPU ones too)");
    const int64_t step = ++steps_[i];
    const double bc1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
    const double bc2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = Tensor::zeros(p.sizes(), p.dtype());
      exp_avg_sq_[i] = Tensor::zeros(p.sizes(), p.dtype());
    }
    dispatch_compute(p.dtype(), "Adam", [&]<typename T>() {
      T* w = p.data<T>();
      const T* gr = g.data<T>();
      T* m = exp_avg_[i].data<T>();
      T* v = exp_avg_sq_[i].data<T>();
      const T b1 = static_cast<T>(o.beta1), b2 = static_cast<T>(o.beta2);
      const T step_size = static_cast<T>(o.lr / bc1);
      const T sqrt_bc2 = static_cast<T>(std::sqrt(bc2));
      const T eps = static_cast<T>(o.eps), wd = static_cast<T>(o.weight_decay);
      const T shrink = static_cast<T>(1.0 - o.lr * o.weight_decay);
      const int64_t n = p.numel();
      for (int64_t j = 0; j < n; ++j) {
        T d = gr[j];
        if (decoupled_)
          w[j] *= shrink;
        else
          d += wd * w[j];
        m[j] = b1 * m[j] + (T(1) - b1) * d;
        v[j] = b2 * v[j] + (T(1) - b2) * d * d;
        w[j] -= step_size * m[j] / (std::sqrt(v[j]) / sqrt_bc2 + eps);
      }
    });
    p.bump_version();
  }
}

}  // namespace ddpscope::optim
