// Reductions on the CPU.
#include <algorithm>
#include <cmath>

#include "cuda_dispatch.h"
#include "kernels.h"
#include "strided_loop.h"

namespace ddpscope::kernels {

Tensor sum(const Tensor& a) {
  DDPSCOPE_ROUTE_CUDA(a, sum(a));
  return dispatch_compute(a.dtype(), "sum", [&]<typename T>() {
    const Tensor c = a.contiguous();
    const T* p = c.data<T>();
    // Accumulate in double: f32 sums over millions of elements would lose digits.
    double acc = 0.0;
    const int64_t n = c.numel();
    for (int64_t i = 0; i < n; ++i)
      acc += p[i];
    return Tensor::scalar(acc, a.dtype());
  });
}

Tensor sum_dims(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  const int64_t nd = a.dim();
  std::vector<bool> reduce(static_cast<size_t>(nd), false);
  for (int64_t& d : dims) {
    if (d < 0) d += nd;
    DDPSCOPE_CHECK(d >= 0 && d < nd, "sum: dimension out of range for ", a.describe());
    reduce[d] = true;
  }
  DDPSCOPE_ROUTE_CUDA(a, sum_dims(a, dims, keepdim));
  Shape kept_shape(a.sizes());
  for (int64_t d = 0; d < nd; ++d) {
    if (reduce[d]) kept_shape[d] = 1;
  }
  Tensor out = Tensor::zeros(kept_shape, a.dtype(), a.device());
  // Walk the input; the output's stride is 0 along reduced dimensions, so every input
  // element lands on its row's accumulator.
  Shape out_strides = out.strides();
  for (int64_t d = 0; d < nd; ++d) {
    if (reduce[d]) out_strides[d] = 0;
  }
  dispatch_compute(a.dtype(), "sum", [&]<typename T>() {
    T* o = out.data<T>();
    const T* in = a.data<T>();
    for_each_offset<2>(a.sizes(), {&out_strides, &a.strides()}, {0, 0},
                       [&](const std::array<int64_t, 2>& off) { o[off[0]] += in[off[1]]; });
  });
  if (keepdim) return out;
  Shape squeezed;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduce[d]) squeezed.push_back(a.size(d));
  }
  return out.view(squeezed);
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.sizes() == shape) return a;
  const int64_t lead = a.dim() - static_cast<int64_t>(shape.size());
  DDPSCOPE_CHECK(lead >= 0, "sum_to: cannot reduce ", a.describe(), " to ", shape_str(shape));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d < lead || (shape[d - lead] == 1 && a.size(d) != 1)) dims.push_back(d);
  }
  Tensor r = dims.empty() ? a : sum_dims(a, dims, true);
  return r.contiguous().view(shape);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  DDPSCOPE_CHECK(a.sizes() == b.sizes(), "max_abs_diff: ", a.describe(), " vs ", b.describe());
  const std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  double m = 0.0;
  for (size_t i = 0; i < va.size(); ++i) {
    const double d = std::fabs(va[i] - vb[i]);
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace ddpscope::kernels
