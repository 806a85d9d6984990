// Elementwise ops and their gradients. Broadcasting ops sum their gradient back to each
// input's shape.
#include "../../tensor/kernels.h"
#include "../function_helpers.h"
#include "../ops.h"
#include "../saved_tensor.h"

namespace ddpscope {
using namespace autograd;
namespace k = kernels;

namespace {

class BinaryBackward : public Node {
 public:
  BinaryBackward(k::BinaryOp op, const Tensor& a, const Tensor& b) : op_(op), a_shape_(a.sizes()), b_shape_(b.sizes()) {
    if (op == k::BinaryOp::Mul || op == k::BinaryOp::Div) {
      a_ = SavedTensor(a);
      b_ = SavedTensor(b);
    }
  }
  std::string name() const override {
    switch (op_) {
      case k::BinaryOp::Add: return "AddBackward";
      case k::BinaryOp::Sub: return "SubBackward";
      case k::BinaryOp::Mul: return "MulBackward";
      case k::BinaryOp::Div: return "DivBackward";
    }
    return "BinaryBackward";
  }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    Tensor ga, gb;
    switch (op_) {
      case k::BinaryOp::Add:
        ga = g;
        gb = g;
        break;
      case k::BinaryOp::Sub:
        ga = g;
        if (wants_grad(*this, 1)) gb = k::unary(g, k::UnaryOp::Neg);
        break;
      case k::BinaryOp::Mul: {
        const Tensor a = a_.unpack(name()), b = b_.unpack(name());
        if (wants_grad(*this, 0)) ga = k::binary(g, b, k::BinaryOp::Mul);
        if (wants_grad(*this, 1)) gb = k::binary(g, a, k::BinaryOp::Mul);
        break;
      }
      case k::BinaryOp::Div: {
        const Tensor a = a_.unpack(name()), b = b_.unpack(name());
        if (wants_grad(*this, 0)) ga = k::binary(g, b, k::BinaryOp::Div);
        if (wants_grad(*this, 1)) {
          // d(a/b)/db = -a / b^2
          const Tensor q =
              k::binary(k::binary(g, a, k::BinaryOp::Mul), k::unary(b, k::UnaryOp::Square), k::BinaryOp::Div);
          gb = k::unary(q, k::UnaryOp::Neg);
        }
        break;
      }
    }
    if (ga.defined() && wants_grad(*this, 0))
      ga = k::sum_to(ga, a_shape_);
    else
      ga = Tensor();
    if (gb.defined() && wants_grad(*this, 1))
      gb = k::sum_to(gb, b_shape_);
    else
      gb = Tensor();
    return {ga, gb};
  }
  void release_variables() override {
    if (a_.defined() || b_.defined()) {
      a_.reset();
      b_.reset();
    }
  }

 private:
  k::BinaryOp op_;
  Shape a_shape_, b_shape_;
  SavedTensor a_, b_;
};

Tensor binary_op(const Tensor& a, const Tensor& b, k::BinaryOp op) {
  Tensor out = k::binary(a, b, op);
  if (needs_grad({&a, &b})) connect(std::make_shared<BinaryBackward>(op, a, b), {&a, &b}, out);
  return out;
}

class ScaleBackward : public Node {
 public:
  explicit ScaleBackward(double scale) : scale_(scale) {}
  std::string name() const override { return scale_ == -1.0 ? "NegBackward" : "ScaleBackward"; }
  variable_list apply(variable_list&& grads) override {
    return {scale_ == 1.0 ? grads[0] : k::affine(grads[0], scale_, 0.0)};
  }

 private:
  double scale_;
};

Tensor affine_op(const Tensor& a, double scale, double shift) {
  Tensor out = scale == -1.0 && shift == 0.0 ? k::unary(a, k::UnaryOp::Neg) : k::affine(a, scale, shift);
  if (needs_grad({&a})) connect(std::make_shared<ScaleBackward>(scale), {&a}, out);
  return out;
}

// Unary functions whose derivative is computed from the saved input or output.
class UnaryBackward : public Node {
 public:
  UnaryBackward(k::UnaryOp op, const Tensor& input, const Tensor& output, double exponent = 0)
      : op_(op), exponent_(exponent) {
    if (op == k::UnaryOp::Gelu || op == k::UnaryOp::Log || op == k::UnaryOp::Square) {
      saved_ = SavedTensor(input);
    } else {
      saved_ = SavedTensor(output);
    }
  }
  std::string name() const override {
    switch (op_) {
      case k::UnaryOp::Exp: return "ExpBackward";
      case k::UnaryOp::Log: return "LogBackward";
      case k::UnaryOp::Sqrt: return "SqrtBackward";
      case k::UnaryOp::Tanh: return "TanhBackward";
      case k::UnaryOp::Sigmoid: return "SigmoidBackward";
      case k::UnaryOp::Relu: return "ReluBackward";
      case k::UnaryOp::Gelu: return "GeluBackward";
      case k::UnaryOp::Square: return "PowBackward";
      default: return "UnaryBackward";
    }
  }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor s = saved_.unpack(name());
    switch (op_) {
      case k::UnaryOp::Exp: return {k::binary(g, s, k::BinaryOp::Mul)};
      case k::UnaryOp::Log: return {k::binary(g, s, k::BinaryOp::Div)};
      case k::UnaryOp::Sqrt:  // d sqrt(x) = 1 / (2 sqrt(x))
        return {k::binary(g, k::affine(s, 2.0, 0.0), k::BinaryOp::Div)};
      case k::UnaryOp::Tanh: return {k::tanh_backward(g, s)};
      case k::UnaryOp::Sigmoid: return {k::sigmoid_backward(g, s)};
      case k::UnaryOp::Relu: return {k::relu_backward(g, s)};
      case k::UnaryOp::Gelu: return {k::gelu_backward(g, s)};
      case k::UnaryOp::Square: return {k::pow_backward(g, s, exponent_)};
      default: throw DDPSCOPE_ERROR("no gradient rule for this unary op");
    }
  }
  void release_variables() override { saved_.reset(); }

 private:
  k::UnaryOp op_;
  double exponent_;
  SavedTensor saved_;
};

Tensor unary_op(const Tensor& a, k::UnaryOp op) {
  Tensor out = k::unary(a, op);
  if (needs_grad({&a})) connect(std::make_shared<UnaryBackward>(op, a, out), {&a}, out);
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(a, b, k::BinaryOp::Add); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(a, b, k::BinaryOp::Sub); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(a, b, k::BinaryOp::Mul); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(a, b, k::BinaryOp::Div); }
Tensor neg(const Tensor& a) { return affine_op(a, -1.0, 0.0); }
Tensor add_scalar(const Tensor& a, double s) { return affine_op(a, 1.0, s); }
Tensor mul_scalar(const Tensor& a, double s) { return affine_op(a, s, 0.0); }
Tensor exp(const Tensor& a) { return unary_op(a, k::UnaryOp::Exp); }
Tensor ln(const Tensor& a) { return unary_op(a, k::UnaryOp::Log); }
Tensor sqrt(const Tensor& a) { return unary_op(a, k::UnaryOp::Sqrt); }
Tensor tanh(const Tensor& a) { return unary_op(a, k::UnaryOp::Tanh); }
Tensor sigmoid(const Tensor& a) { return unary_op(a, k::UnaryOp::Sigmoid); }
Tensor relu(const Tensor& a) { return unary_op(a, k::UnaryOp::Relu); }
Tensor gelu(const Tensor& a) { return unary_op(a, k::UnaryOp::Gelu); }

Tensor pow(const Tensor& a, double exponent) {
  Tensor out = k::pow_scalar(a, exponent);
  if (needs_grad({&a})) {
    connect(std::make_shared<UnaryBackward>(k::UnaryOp::Square, a, out, exponent), {&a}, out);
  }
  return out;
}

}  // namespace ddpscope
