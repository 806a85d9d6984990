// Optimizers update parameters in place from their .grad, outside autograd. A parameter
// without a gradient (unused this step) is skipped, as in PyTorch.
//
//   SGD opt(model.parameters(), {.lr = 0.1, .momentum = 0.9});
//   opt.zero_grad(); loss.backward(); opt.step();
//
// step_params() steps some of the parameters: DDP's fused optimizer (PyTorch's
// _register_fused_optim) steps each bucket's parameters as soon as that bucket's
// reduction is done, while later buckets are still being reduced. Each update reads only
// its own parameter's state, so stepping every parameter once, in any grouping, equals
// one step().
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "../nn/state_dict.h"
#include "../tensor/tensor.h"

namespace ddpscope::optim {

// A state dict entry's name, "state.<index>.<field>", and back (nullopt: another form).
std::string state_key(size_t index, const std::string& field);
std::optional<std::pair<size_t, std::string>> parse_state_key(const std::string& key);

// Drops (set_to_none) or zeroes the gradients of `params`.
void zero_grad(const std::vector<Tensor>& params, bool set_to_none = true);

class Optimizer {
 public:
  explicit Optimizer(std::vector<Tensor> params);
  virtual ~Optimizer() = default;
  void step();
  // Indices into params(); a parameter without a gradient is skipped, as in step().
  virtual void step_params(std::span<const size_t> indices) = 0;
  // set_to_none drops the gradient buffers (the next backward steals fresh ones);
  // otherwise they are zeroed in place.
  void zero_grad(bool set_to_none = true);
  const std::vector<Tensor>& params() const { return params_; }
  // Bytes of state this optimizer holds (momentum buffers, Adam's moments), as created
  // so far (state appears at a parameter's first update).
  virtual int64_t state_bytes() const { return 0; }

  // The per-parameter state, PyTorch's optimizer.state_dict()["state"] flattened: entries
  // "state.<index>.<field>" (index into params()) for the parameters that have state so
  // far. Hyperparameters are not in it: they come from the options the optimizer is built
  // with. Adam's "step" is a scalar i64 tensor; the others have their parameter's shape.
  nn::StateDict state_dict() const;
  // Replaces the whole state with `state` (a state_dict() of an optimizer of the same kind
  // over parameters of the same shapes). Checked first, so a bad entry changes nothing and
  // the error names it.
  void load_state_dict(const nn::StateDict& state);
  // The names of the state this kind of optimizer keeps per parameter.
  virtual std::vector<std::string> state_fields() const { return {}; }

 protected:
  // A parameter's state by field name; an undefined tensor means none yet.
  virtual Tensor get_state(size_t index, const std::string& field) const;
  virtual void set_state(size_t index, const std::string& field, Tensor value);

  std::vector<Tensor> params_;
};

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SgdOptions options);
  using Optimizer::step;
  void step_params(std::span<const size_t> indices) override;
  const SgdOptions& options() const { return options_; }
  int64_t state_bytes() const override;
  std::vector<std::string> state_fields() const override { return {"momentum_buffer"}; }

 protected:
  Tensor get_state(size_t index, const std::string& field) const override;
  void set_state(size_t index, const std::string& field, Tensor value) override;

 private:
  SgdOptions options_;
  std::vector<Tensor> momentum_buffers_;  // undefined until first used
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

// Adam (L2 penalty added to the gradient) or, with decoupled = true, AdamW (weights
// shrunk directly by lr * weight_decay).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled = false);
  using Optimizer::step;
  void step_params(std::span<const size_t> indices) override;
  // How often parameter `index` was updated (its bias correction's step count; as in
  // PyTorch, counted per parameter: one without a gradient is not stepped).
  int64_t steps(size_t index) const { return steps_[index]; }
  int64_t state_bytes() const override;
  std::vector<std::string> state_fields() const override { return {"step", "exp_avg", "exp_avg_sq"}; }

 protected:
  Tensor get_state(size_t index, const std::string& field) const override;
  void set_state(size_t index, const std::string& field, Tensor value) override;

 private:
  AdamOptions options_;
  bool decoupled_;
  std::vector<int64_t> steps_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, true) {}
};

}  // namespace ddpscope::optim
