// Matrix products. linear() is one fused op: the bias is written into the output first
// and the GEMM accumulates onto it (beta = 1), and its backward reads W and x in place
// (transposed views, no copies).
#include "../../tensor/kernels.h"
#include "../accumulate_grad.h"
#include "../function_helpers.h"
#include "../ops.h"
#include "../saved_tensor.h"

namespace ddpscope {
using namespace autograd;
namespace k = kernels;

namespace {

Tensor last_two_transposed(const Tensor& t) { return t.transpose(-1, -2); }

class MatmulBackward : public Node {
 public:
  MatmulBackward(const Tensor& a, const Tensor& b) : a_(a), b_(b) {}
  std::string name() const override { return "MatmulBackward"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    Tensor ga, gb;
    if (wants_grad(*this, 0)) ga = k::matmul(g, last_two_transposed(b_.unpack(name())));
    if (wants_grad(*this, 1)) gb = k::matmul(last_two_transposed(a_.unpack(name())), g);
    return {ga, gb};
  }
  void release_variables() override {
    a_.reset();
    b_.reset();
  }

 private:
  SavedTensor a_, b_;
};

class LinearBackward : public Node {
 public:
  LinearBackward(const Tensor& x2d, const Tensor& weight, Shape input_shape)
      : x_(x2d), weight_(weight), input_shape_(std::move(input_shape)) {}
  std::string name() const override { return "LinearBackward"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor g = grads[0].contiguous().view({-1, grads[0].size(-1)});
    Tensor gx, gw, gb;
    if (wants_grad(*this, 0)) {
      const Tensor w = weight_.unpack(name());
      gx = k::matmul(g, w).view(input_shape_);  // [N, out] @ [out, in]
    }
    if (wants_grad(*this, 1)) {
      const Tensor x = x_.unpack(name());
      // [out, N] @ [N, in], straight into DDP's bucket when it offers the slot.
      const Tensor gt = g.transpose(0, 1);
      const Tensor slot =
          is_compute_type(g.dtype()) && x.dtype() == g.dtype()
              ? take_gradient_destination(next_edges()[1], {g.size(1), x.size(1)}, g.dtype(), g.device())
              : Tensor();
      if (slot.defined()) {
        k::gemm(gt, x, slot);
        gw = slot;
      } else {
        gw = k::matmul(gt, x);
      }
    }
    if (wants_grad(*this, 2)) gb = k::sum_dims(g, {0}, false);
    return {gx, gw, gb};
  }
  void release_variables() override {
    x_.reset();
    weight_.reset();
  }

 private:
  SavedTensor x_, weight_;
  Shape input_shape_;
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  Tensor out = k::matmul(a, b);
  if (needs_grad({&a, &b})) connect(std::make_shared<MatmulBackward>(a, b), {&a, &b}, out);
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  DDPSCOPE_CHECK(weight.dim() == 2, "linear: weight must be [out, in], got ", weight.describe());
  DDPSCOPE_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x.describe(),
                 " does not match weight ", weight.describe(), " (last dimension must be ", weight.size(1), ")");
  DDPSCOPE_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(0)), "linear: bias ",
                 bias.describe(), " does not match weight ", weight.describe());
  const Tensor x2d = x.contiguous().view({-1, x.size(-1)});
  Tensor out = Tensor::empty({x2d.size(0), weight.size(0)}, x.dtype(), x.device());
  double beta = 0.0;
  if (bias.defined()) {
    k::copy(out, bias.expand(out.sizes()));
    beta = 1.0;
  }
  k::gemm(x2d, weight.transpose(0, 1), out, 1.0, beta);
  Shape out_shape = x.sizes();
  out_shape.back() = weight.size(0);
  out = out.view(out_shape);
  if (needs_grad({&x, &weight, &bias})) {
    connect(std::make_shared<LinearBackward>(x2d, weight, x.sizes()), {&x, &weight, &bias}, out);
  }
  return out;
}

}  // namespace ddpscope
