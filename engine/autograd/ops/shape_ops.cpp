// Reshape, transpose, permute, narrow: views where the layout allows, and gradients
// that map back to the input's layout.
#include <numeric>

#include "../../tensor/kernels.h"
#include "../function_helpers.h"
#include "../ops.h"

namespace ddpscope {
using namespace autograd;
namespace k = kernels;

namespace {

class ReshapeBackward : public Node {
 public:
  explicit ReshapeBackward(Shape input_shape) : input_shape_(std::move(input_shape)) {}
  std::string name() const override { return "ReshapeBackward"; }
  variable_list apply(variable_list&& grads) override { return {grads[0].contiguous().view(input_shape_)}; }

 private:
  Shape input_shape_;
};

class PermuteBackward : public Node {
 public:
  explicit PermuteBackward(std::vector<int64_t> inverse, bool is_transpose)
      : inverse_(std::move(inverse)), is_transpose_(is_transpose) {}
  std::string name() const override { return is_transpose_ ? "TransposeBackward" : "PermuteBackward"; }
  variable_list apply(variable_list&& grads) override { return {grads[0].permute(inverse_)}; }

 private:
  std::vector<int64_t> inverse_;
  bool is_transpose_;
};

class NarrowBackward : public Node {
 public:
  NarrowBackward(Shape input_shape, int64_t dim, int64_t start)
      : input_shape_(std::move(input_shape)), dim_(dim), start_(start) {}
  std::string name() const override { return "NarrowBackward"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    Tensor out = Tensor::zeros(input_shape_, g.dtype(), g.device());
    k::copy(out.narrow(dim_, start_, g.size(dim_)), g);
    return {out};
  }

 private:
  Shape input_shape_;
  int64_t dim_, start_;
};

class CastBackward : public Node {
 public:
  explicit CastBackward(DType input_dtype) : input_dtype_(input_dtype) {}
  std::string name() const override { return "CastBackward"; }
  variable_list apply(variable_list&& grads) override { return {grads[0].to(input_dtype_)}; }

 private:
  DType input_dtype_;
};

Tensor permute_impl(const Tensor& a, const std::vector<int64_t>& dims, bool is_transpose) {
  Tensor out = a.permute(dims);
  if (needs_grad({&a})) {
    std::vector<int64_t> inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) {
      inverse[dims[i] < 0 ? dims[i] + a.dim() : dims[i]] = static_cast<int64_t>(i);
    }
    connect(std::make_shared<PermuteBackward>(inverse, is_transpose), {&a}, out);
  }
  return out;
}

}  // namespace

Tensor cast(const Tensor& a, DType dtype) {
  Tensor out = a.dtype() == dtype ? a.detach() : a.to(dtype);
  if (needs_grad({&a})) connect(std::make_shared<CastBackward>(a.dtype()), {&a}, out);
  return out;
}

Tensor reshape(const Tensor& a, const Shape& shape) {
  Tensor out = a.is_contiguous() ? a.view(shape) : a.clone().view(shape);
  if (needs_grad({&a})) connect(std::make_shared<ReshapeBackward>(a.sizes()), {&a}, out);
  return out;
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  std::vector<int64_t> dims(static_cast<size_t>(a.dim()));
  std::iota(dims.begin(), dims.end(), 0);
  const int64_t d0 = dim0 < 0 ? dim0 + a.dim() : dim0, d1 = dim1 < 0 ? dim1 + a.dim() : dim1;
  DDPSCOPE_CHECK(d0 >= 0 && d0 < a.dim() && d1 >= 0 && d1 < a.dim(), "transpose: dimensions ", dim0, ", ", dim1,
                 " out of range for ", a.describe());
  std::swap(dims[d0], dims[d1]);
  return permute_impl(a, dims, true);
}

Tensor permute(const Tensor& a, const std::vector<int64_t>& dims) { return permute_impl(a, dims, false); }

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  Tensor out = a.narrow(dim, start, length);
  if (needs_grad({&a})) {
    connect(std::make_shared<NarrowBackward>(a.sizes(), dim < 0 ? dim + a.dim() : dim, start), {&a}, out);
  }
  return out;
}

}  // namespace ddpscope
