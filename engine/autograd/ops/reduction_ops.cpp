// Sums and means; their gradient broadcasts the incoming gradient back to the input.
#include "../../tensor/kernels.h"
#include "../function_helpers.h"
#include "../ops.h"

namespace ddpscope {
using namespace autograd;
namespace k = kernels;

namespace {

class SumBackward : public Node {
 public:
  SumBackward(Shape input_shape, Shape kept_shape, double scale, bool is_mean)
      : input_shape_(std::move(input_shape)), kept_shape_(std::move(kept_shape)), scale_(scale), is_mean_(is_mean) {}
  std::string name() const override { return is_mean_ ? "MeanBackward" : "SumBackward"; }
  variable_list apply(variable_list&& grads) override {
    // Restore reduced dimensions as size 1, then broadcast to the input's shape.
    Tensor g = grads[0].contiguous().view(kept_shape_);
    Tensor out = Tensor::empty(input_shape_, g.dtype(), g.device());
    k::copy(out, g.expand(input_shape_));
    if (scale_ != 1.0) k::scale_(out, scale_);
    return {out};
  }

 private:
  Shape input_shape_, kept_shape_;
  double scale_;
  bool is_mean_;
};

Shape kept_shape_of(const Tensor& a, std::vector<int64_t> dims) {
  Shape kept = a.sizes();
  for (int64_t d : dims)
    kept[d < 0 ? d + a.dim() : d] = 1;
  return kept;
}

Tensor reduce(const Tensor& a, const std::vector<int64_t>* dims, bool keepdim, bool is_mean) {
  Tensor out = dims ? k::sum_dims(a, *dims, keepdim) : k::sum(a);
  const double count = static_cast<double>(a.numel()) / static_cast<double>(std::max<int64_t>(out.numel(), 1));
  if (is_mean) k::scale_(out, count > 0 ? 1.0 / count : 0.0);
  if (needs_grad({&a})) {
    Shape kept = dims ? kept_shape_of(a, *dims) : Shape(a.sizes().size(), 1);
    connect(std::make_shared<SumBackward>(a.sizes(), kept, is_mean ? 1.0 / count : 1.0, is_mean), {&a}, out);
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& a) { return reduce(a, nullptr, false, false); }
Tensor sum(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) { return reduce(a, &dims, keepdim, false); }
Tensor mean(const Tensor& a) { return reduce(a, nullptr, false, true); }
Tensor mean(const Tensor& a, const std::vector<int64_t>& dims, bool keepdim) { return reduce(a, &dims, keepdim, true); }

}  // namespace ddpscope
