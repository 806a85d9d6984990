#include "powersgd_hook.h"

#include <cmath>

#include "tensor/kernels.h"
#include "tensor/random.h"

namespace ddpscope::ddp {
namespace {

// Gram-Schmidt on the columns of p (n x r, contiguous), in place.
void orthonormalize_columns(const Tensor& p) {
  const int64_t n = p.size(0), r = p.size(1);
  dispatch_compute(p.dtype(), "PowerSGD orthogonalisation", [&]<typename T>() {
    T* a = p.data<T>();
    for (int64_t c = 0; c < r; ++c) {
      for (int64_t prev = 0; prev < c; ++prev) {
        T dot = 0;
        for (int64_t i = 0; i < n; ++i)
          dot += a[i * r + c] * a[i * r + prev];
        for (int64_t i = 0; i < n; ++i)
          a[i * r + c] -= dot * a[i * r + prev];
      }
      T norm = 0;
      for (int64_t i = 0; i < n; ++i)
        norm += a[i * r + c] * a[i * r + c];
      norm = std::sqrt(norm) + T(1e-8);  // a zero column stays (nearly) zero
      for (int64_t i = 0; i < n; ++i)
        a[i * r + c] /= norm;
    }
  });
  p.bump_version();
}

}  // namespace

std::shared_ptr<c10d::Future> PowerSgdState::reduce(GradBucket& bucket) {
  const int64_t iteration = iteration_;
  if (bucket.is_last) ++iteration_;
  uncompressed_ += bucket.buffer.numel();
  if (iteration < options_.start_iteration) {
    sent_ += bucket.buffer.numel();
    return group_->allreduce(bucket.buffer, {.op = c10d::ReduceOp::Avg})->get_future();
  }
  // Views of each parameter's gradient inside the flat bucket.
  int64_t offset = 0;
  std::vector<Tensor> uncompressed;
  std::vector<std::pair<Tensor, Tensor>> matrices;  // (view as n x m, parameter)
  for (const Tensor& p : bucket.parameters) {
    Tensor view = bucket.buffer.narrow(0, offset, p.numel());
    offset += p.numel();
    const int64_t n = p.dim() >= 2 ? p.size(0) : 1, m = p.numel() / std::max<int64_t>(n, 1);
    // Compression pays only when r (n + m) < n m.
    if (p.dim() < 2 || options_.rank * (n + m) >= n * m) {
      uncompressed.push_back(view);
    } else {
      matrices.emplace_back(view.view({n, m}), p);
    }
  }
  for (const Tensor& v : uncompressed) {
    sent_ += v.numel();
    group_->allreduce(v, {.op = c10d::ReduceOp::Avg})->wait();
  }
  for (auto& [grad, param] : matrices) {
    const int64_t n = grad.size(0), m = grad.size(1), r = options_.rank;
    const TensorImpl* key = param.impl();
    // M = gradient + what earlier approximations missed.
    Tensor M = grad.clone();
    if (options_.error_feedback) {
      auto e = errors_.find(key);
      if (e != errors_.end()) kernels::add_(M, e->second);
    }
    Tensor& q = qs_[key];
    if (!q.defined() || !options_.warm_start) {
      Generator gen(options_.seed + static_cast<uint64_t>(n * 1000003 + m));
      q = randn({m, r}, grad.dtype(), &gen);
      orthonormalize_columns(q);
    }
    Tensor P = kernels::matmul(M, q);  // n x r
    group_->allreduce(P)->wait();
    orthonormalize_columns(P);
    q = kernels::matmul(M.transpose(0, 1), P);  // m x r
    group_->allreduce(q, {.op = c10d::ReduceOp::Avg})->wait();
    sent_ += (n + m) * r;
    Tensor approx = kernels::matmul(P, q.transpose(0, 1));  // n x m, the averaged gradient
    if (options_.error_feedback) errors_[key] = kernels::binary(M, approx, kernels::BinaryOp::Sub);
    kernels::copy(grad, approx);
  }
  auto done = std::make_shared<c10d::Future>();
  done->mark_completed({bucket.buffer});
  return done;
}

CommHook powersgd_hook(std::shared_ptr<PowerSgdState> state) {
  DDPSCOPE_CHECK(state && state->options_.rank >= 1, "powersgd_hook: needs a state with rank >= 1");
  return [state](GradBucket& bucket) { return state->reduce(bucket); };
}

}  // namespace ddpscope::ddp
