// The autograd methods of Tensor (declared in tensor/tensor.h) and the meta helpers.
#include "../tensor/kernels.h"
#include "accumulate_grad.h"
#include "autograd_meta.h"
#include "engine.h"

namespace ddpscope {
using autograd::AutogradMeta;
using autograd::meta_of;

namespace autograd {

AutogradMeta& materialize_meta(const Tensor& t) {
  DDPSCOPE_CHECK(t.defined(), "autograd: operation on an undefined tensor");
  auto& slot = t.impl()->autograd_meta;
  if (!slot) slot = std::make_shared<AutogradMeta>();
  return *slot;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta& meta = materialize_meta(t);
  DDPSCOPE_CHECK(!meta.grad_fn, "grad_accumulator: ", t.describe(), " is not a leaf");
  DDPSCOPE_CHECK(meta.requires_grad, "grad_accumulator: ", t.describe(), " does not require grad");
  std::lock_guard<std::mutex> lock(meta.accumulator_mutex);
  if (auto acc = meta.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t);
  meta.grad_accumulator = acc;
  return acc;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* meta = meta_of(t);
  if (!meta) return {};
  if (meta->grad_fn) return {meta->grad_fn, meta->output_nr};
  if (meta->requires_grad) return {grad_accumulator(t), 0};
  return {};
}

void register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  AutogradMeta& meta = materialize_meta(leaf);
  DDPSCOPE_CHECK(!meta.grad_fn && meta.requires_grad,
                 "post-accumulate-grad hooks go on leaf tensors that require grad; ", leaf.describe(), " is not one");
  meta.post_accumulate_hooks.push_back(std::move(hook));
}

}  // namespace autograd

bool Tensor::requires_grad() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta && (meta->requires_grad || meta->grad_fn);
}

Tensor& Tensor::set_requires_grad(bool value) {
  AutogradMeta& meta = autograd::materialize_meta(*this);
  DDPSCOPE_CHECK(!meta.grad_fn, "set_requires_grad: ", describe(),
                 " is the result of an operation; only leaf tensors can change it (use "
                 "detach() for a leaf copy)");
  DDPSCOPE_CHECK(!value || is_floating(dtype()), "set_requires_grad: ", describe(),
                 " has an integer dtype; only floating tensors can require grad");
  meta.requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const {
  const AutogradMeta* meta = meta_of(*this);
  return !meta || !meta->grad_fn;
}

const Tensor& Tensor::grad() const {
  static const Tensor kUndefined;
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->grad : kUndefined;
}

void Tensor::set_grad(Tensor grad) const {
  if (grad.defined()) {
    DDPSCOPE_CHECK(grad.sizes() == sizes() && grad.dtype() == dtype(), "set_grad: gradient ", grad.describe(),
                   " does not match ", describe());
  }
  autograd::materialize_meta(*this).grad = std::move(grad);
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->grad_fn : nullptr;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->output_nr : 0;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, gradient.defined() ? autograd::variable_list{gradient} : autograd::variable_list{},
                     retain_graph);
}

void Tensor::register_hook(GradHook hook) const {
  AutogradMeta& meta = autograd::materialize_meta(*this);
  DDPSCOPE_CHECK(meta.requires_grad || meta.grad_fn, "register_hook: ", describe(),
                 " does not require grad, so no gradient will reach the hook");
  if (meta.grad_fn) {
    meta.grad_fn->add_tensor_pre_hook(meta.output_nr, std::move(hook));
  } else {
    meta.leaf_hooks.push_back(std::move(hook));
  }
}

void Tensor::retain_grad() const {
  if (is_leaf()) return;  // leaves keep .grad anyway
  std::weak_ptr<TensorImpl> weak = impl_ptr();
  register_hook([weak](const Tensor& g) -> std::optional<Tensor> {
    if (auto impl = weak.lock()) {
      Tensor self(impl);
      const Tensor& current = self.grad();
      self.set_grad(current.defined() ? kernels::binary(current, g, kernels::BinaryOp::Add) : g.clone());
    }
    return std::nullopt;
  });
}

Tensor Tensor::detach() const { return as_strided(sizes(), strides(), storage_offset()); }

const std::string& Tensor::name() const {
  static const std::string kEmpty;
  const AutogradMeta* meta = meta_of(*this);
  return meta ? meta->name : kEmpty;
}

void Tensor::set_name(std::string name) const { autograd::materialize_meta(*this).name = std::move(name); }

}  // namespace ddpscope
