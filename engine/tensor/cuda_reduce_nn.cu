// Reductions and neural-network kernels on CUDA. Row-wise ops use one thread per row:
// simple and correct; the widths here (model dims, vocabularies) keep rows short.
#include "cuda_common.cuh"
#include "cuda_kernels.h"

namespace ddpscope::cuda_kernels {
namespace {

template <typename T>
__global__ void sum_kernel(const T* in, Indexer ii, double* out, int64_t n) {
  __shared__ double partial[kThreads];
  double acc = 0;
  CUDA_GRID_LOOP(i, n) { acc += static_cast<double>(in[ii.offset(i)]); }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

template <typename T>
__global__ void scatter_sum_kernel(const T* in, Indexer ii, T* out, Indexer oi, int64_t n) {
  CUDA_GRID_LOOP(i, n) { atomicAdd(out + oi.offset(i), in[ii.offset(i)]); }
}

template <typename T>
__global__ void softmax_rows(const T* in, T* out, int64_t rows, int64_t width, bool take_log) {
  CUDA_GRID_LOOP(r, rows) {
    const T* x = in + r * width;
    T* y = out + r * width;
    T m = x[0];
    for (int64_t j = 1; j < width; ++j)
      m = x[j] > m ? x[j] : m;
    T total = 0;
    for (int64_t j = 0; j < width; ++j)
      total += exp(x[j] - m);
    const T lse = m + log(total);
    for (int64_t j = 0; j < width; ++j)
      y[j] = take_log ? x[j] - lse : exp(x[j] - lse);
  }
}

template <typename T>
__global__ void softmax_backward_rows(const T* g, const T* y, T* out, int64_t rows, int64_t width, bool take_log) {
  CUDA_GRID_LOOP(r, rows) {
    const T* gr = g + r * width;
    const T* yr = y + r * width;
    T* o = out + r * width;
    T acc = 0;
    for (int64_t j = 0; j < width; ++j)
      acc += take_log ? gr[j] : gr[j] * yr[j];
    for (int64_t j = 0; j < width; ++j) {
      o[j] = take_log ? gr[j] - exp(yr[j]) * acc : yr[j] * (gr[j] - acc);
    }
  }
}

template <typename T>
__global__ void layer_norm_rows(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t rows, int64_t width,
                                double eps) {
  CUDA_GRID_LOOP(r, rows) {
    const T* xr = x + r * width;
    double mu = 0, var = 0;
    for (int64_t j = 0; j < width; ++j)
      mu += xr[j];
    mu /= width;
    for (int64_t j = 0; j < width; ++j)
      var += (xr[j] - mu) * (xr[j] - mu);
    var /= width;
    const T rs = static_cast<T>(1.0 / sqrt(var + eps));
    for (int64_t j = 0; j < width; ++j) {
      const T xhat = (xr[j] - static_cast<T>(mu)) * rs;
      y[r * width + j] = xhat * (w ? w[j] : T(1)) + (b ? b[j] : T(0));
    }
    mean[r] = static_cast<T>(mu);
    rstd[r] = rs;
  }
}

template <typename T>
__global__ void layer_norm_backward_rows(const T* dy, const T* x, const T* w, const T* mean, const T* rstd, T* dx,
                                         T* dw, T* db, int64_t rows, int64_t width) {
  CUDA_GRID_LOOP(r, rows) {
    const T* g = dy + r * width;
    const T* xr = x + r * width;
    const T m = mean[r], rs = rstd[r];
    T sum_d = 0, sum_dx = 0;
    for (int64_t j = 0; j < width; ++j) {
      const T xhat = (xr[j] - m) * rs;
      const T d = g[j] * (w ? w[j] : T(1));
      sum_d += d;
      sum_dx += d * xhat;
      if (dw) {
        atomicAdd(dw + j, g[j] * xhat);
        atomicAdd(db + j, g[j]);
      }
    }
    const T inv_n = T(1) / static_cast<T>(width);
    for (int64_t j = 0; j < width; ++j) {
      const T xhat = (xr[j] - m) * rs;
      const T d = g[j] * (w ? w[j] : T(1));
      dx[r * width + j] = rs * (d - sum_d * inv_n - xhat * sum_dx * inv_n);
    }
  }
}

// bad[0] records 1 + the first out-of-range index position seen.
template <typename T>
__global__ void embedding_kernel(const T* table, const int64_t* idx, T* out, int64_t count, int64_t width, int64_t rows,
                                 int64_t* bad) {
  CUDA_GRID_LOOP(i, count * width) {
    const int64_t k = idx[i / width];
    if (k < 0 || k >= rows) {
      atomicCAS(reinterpret_cast<unsigned long long*>(bad), 0ull, static_cast<unsigned long long>(i / width + 1));
      continue;
    }
    out[i] = table[k * width + i % width];
  }
}

template <typename T>
__global__ void embedding_backward_kernel(const T* g, const int64_t* idx, T* out, int64_t count, int64_t width) {
  CUDA_GRID_LOOP(i, count * width) { atomicAdd(out + idx[i / width] * width + i % width, g[i]); }
}

template <typename T>
__global__ void nll_kernel(const T* lp, const int64_t* t, double* total, int64_t n, int64_t classes, int64_t* bad) {
  CUDA_GRID_LOOP(i, n) {
    const int64_t c = t[i];
    if (c < 0 || c >= classes) {
      atomicCAS(reinterpret_cast<unsigned long long*>(bad), 0ull, static_cast<unsigned long long>(i + 1));
      continue;
    }
    atomicAdd(total, -static_cast<double>(lp[i * classes + c]));
  }
}

template <typename T>
__global__ void nll_backward_kernel(const T* grad, const int64_t* t, T* out, int64_t n, int64_t classes) {
  CUDA_GRID_LOOP(i, n) { out[i * classes + t[i]] = -grad[0] / static_cast<T>(n); }
}

template <typename T>
const T* ptr_or_null(const Tensor& t) {
  return t.defined() ? static_cast<const T*>(t.raw_data()) : nullptr;
}

int64_t first_bad(const Tensor& flag) { return flag.item<int64_t>(); }

}  // namespace

Tensor sum(const Tensor& a) {
  Tensor acc = Tensor::zeros({}, DType::F64, a.device());
  const int64_t n = a.numel();
  if (n > 0) {
    dispatch_float(a.dtype(), "sum", [&](auto tag) {
      using T = decltype(tag);
      sum_kernel<T><<<blocks_for(n), kThreads>>>(static_cast<const T*>(a.raw_data()), make_indexer(a, a.sizes()),
                                                 static_cast<double*>(acc.raw_data()), n);
    });
    check_launch("sum");
  }
  return acc.to(a.dtype());
}

Tensor sum_dims(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  Shape kept = a.sizes();
  for (int64_t d : dims)
    kept[d] = 1;
  Tensor out = Tensor::zeros(kept, a.dtype(), a.device());
  const int64_t n = a.numel();
  if (n > 0) {
    Indexer oi = make_indexer(out, out.sizes());
    for (int d = 0; d < oi.nd; ++d)
      oi.sizes[d] = a.size(d);
    for (int64_t d : dims)
      oi.strides[d] = 0;
    dispatch_float(a.dtype(), "sum", [&](auto tag) {
      using T = decltype(tag);
      scatter_sum_kernel<T><<<blocks_for(n), kThreads>>>(
          static_cast<const T*>(a.raw_data()), make_indexer(a, a.sizes()), static_cast<T*>(out.raw_data()), oi, n);
    });
    check_launch("sum_dims");
  }
  if (keepdim) return out;
  Shape squeezed;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) squeezed.push_back(a.size(d));
  }
  return out.view(squeezed);
}

namespace {
Tensor softmax_impl(const Tensor& x, bool log) {
  const Tensor c = x.contiguous();
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  const int64_t width = x.size(-1), rows = width ? x.numel() / width : 0;
  if (rows == 0) return out;
  dispatch_float(x.dtype(), "softmax", [&](auto tag) {
    using T = decltype(tag);
    softmax_rows<T><<<blocks_for(rows), kThreads>>>(static_cast<const T*>(c.raw_data()),
                                                    static_cast<T*>(out.raw_data()), rows, width, log);
  });
  check_launch("softmax");
  return out;
}
Tensor softmax_backward_impl(const Tensor& grad, const Tensor& output, bool log) {
  const Tensor g = grad.contiguous(), y = output.contiguous();
  Tensor out = Tensor::empty(y.sizes(), y.dtype(), y.device());
  const int64_t width = y.size(-1), rows = width ? y.numel() / width : 0;
  if (rows == 0) return out;
  dispatch_float(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_rows<T><<<blocks_for(rows), kThreads>>>(static_cast<const T*>(g.raw_data()),
                                                             static_cast<const T*>(y.raw_data()),
                                                             static_cast<T*>(out.raw_data()), rows, width, log);
  });
  check_launch("softmax_backward");
  return out;
}
}  // namespace

Tensor softmax(const Tensor& x) { return softmax_impl(x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_impl(x, true); }
Tensor softmax_backward(const Tensor& g, const Tensor& y) { return softmax_backward_impl(g, y, false); }
Tensor log_softmax_backward(const Tensor& g, const Tensor& y) { return softmax_backward_impl(g, y, true); }

kernels::LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const Tensor c = x.contiguous();
  const int64_t width = x.size(-1), rows = width ? x.numel() / width : 0;
  kernels::LayerNormResult r{Tensor::empty(x.sizes(), x.dtype(), x.device()),
                             Tensor::empty({rows}, x.dtype(), x.device()),
                             Tensor::empty({rows}, x.dtype(), x.device())};
  if (rows == 0) return r;
  const Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  const Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  dispatch_float(x.dtype(), "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_rows<T><<<blocks_for(rows), kThreads>>>(
        static_cast<const T*>(c.raw_data()), ptr_or_null<T>(w), ptr_or_null<T>(b), static_cast<T*>(r.output.raw_data()),
        static_cast<T*>(r.mean.raw_data()), static_cast<T*>(r.rstd.raw_data()), rows, width, eps);
  });
  check_launch("layer_norm");
  return r;
}

kernels::LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                            const Tensor& mean, const Tensor& rstd) {
  const Tensor g = grad.contiguous(), c = x.contiguous();
  const int64_t width = x.size(-1), rows = width ? x.numel() / width : 0;
  kernels::LayerNormGrads out{Tensor::empty(x.sizes(), x.dtype(), x.device()), Tensor(), Tensor()};
  const Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  if (w.defined()) {
    out.weight = Tensor::zeros({width}, x.dtype(), x.device());
    out.bias = Tensor::zeros({width}, x.dtype(), x.device());
  }
  if (rows == 0) return out;
  dispatch_float(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    layer_norm_backward_rows<T><<<blocks_for(rows), kThreads>>>(
        static_cast<const T*>(g.raw_data()), static_cast<const T*>(c.raw_data()), ptr_or_null<T>(w),
        static_cast<const T*>(mean.raw_data()), static_cast<const T*>(rstd.raw_data()),
        static_cast<T*>(out.input.raw_data()), w.defined() ? static_cast<T*>(out.weight.raw_data()) : nullptr,
        w.defined() ? static_cast<T*>(out.bias.raw_data()) : nullptr, rows, width);
  });
  check_launch("layer_norm_backward");
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  const Tensor idx =
      indices.device() == weight.device() ? indices.contiguous() : indices.to(weight.device()).contiguous();
  const Tensor w = weight.contiguous();
  const int64_t width = w.size(1), count = idx.numel();
  Shape shape = indices.sizes();
  shape.push_back(width);
  Tensor out = Tensor::empty(shape, w.dtype(), w.device());
  if (count == 0) return out;
  Tensor bad = Tensor::zeros({}, DType::I64, w.device());
  dispatch_float(w.dtype(), "embedding", [&](auto tag) {
    using T = decltype(tag);
    embedding_kernel<T><<<blocks_for(count * width), kThreads>>>(
        static_cast<const T*>(w.raw_data()), static_cast<const int64_t*>(idx.raw_data()),
        static_cast<T*>(out.raw_data()), count, width, w.size(0), static_cast<int64_t*>(bad.raw_data()));
  });
  check_launch("embedding");
  const int64_t at = first_bad(bad);
  DDPSCOPE_CHECK(at == 0, "embedding: index at position ", at - 1, " is out of range for a table of ", w.size(0),
                 " rows");
  return out;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  const Tensor g = grad.contiguous();
  const Tensor idx = indices.device() == grad.device() ? indices.contiguous() : indices.to(grad.device()).contiguous();
  const int64_t width = g.size(-1), count = idx.numel();
  Tensor out = Tensor::zeros({num_weights, width}, g.dtype(), g.device());
  if (count == 0) return out;
  dispatch_float(g.dtype(), "embedding_backward", [&](auto tag) {
    using T = decltype(tag);
    embedding_backward_kernel<T><<<blocks_for(count * width), kThreads>>>(
        static_cast<const T*>(g.raw_data()), static_cast<const int64_t*>(idx.raw_data()),
        static_cast<T*>(out.raw_data()), count, width);
  });
  check_launch("embedding_backward");
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets) {
  const Tensor lp = log_probs.contiguous();
  const Tensor t = targets.device() == lp.device() ? targets.contiguous() : targets.to(lp.device()).contiguous();
  const int64_t n = lp.size(0), classes = lp.size(1);
  Tensor total = Tensor::zeros({}, DType::F64, lp.device());
  Tensor bad = Tensor::zeros({}, DType::I64, lp.device());
  if (n > 0) {
    dispatch_float(lp.dtype(), "nll_loss", [&](auto tag) {
      using T = decltype(tag);
      nll_kernel<T><<<blocks_for(n), kThreads>>>(
          static_cast<const T*>(lp.raw_data()), static_cast<const int64_t*>(t.raw_data()),
          static_cast<double*>(total.raw_data()), n, classes, static_cast<int64_t*>(bad.raw_data()));
    });
    check_launch("nll_loss");
    const int64_t at = first_bad(bad);
    DDPSCOPE_CHECK(at == 0, "cross-entropy: target at row ", at - 1, " is outside the ", classes, " classes");
  }
  Tensor mean = total.to(lp.dtype());
  if (n > 0) scale_(mean, 1.0 / static_cast<double>(n));
  return mean;
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets) {
  const int64_t n = log_probs.size(0), classes = log_probs.size(1);
  Tensor out = Tensor::zeros(log_probs.sizes(), log_probs.dtype(), log_probs.device());
  const Tensor t = targets.device() == out.device() ? targets.contiguous() : targets.to(out.device()).contiguous();
  const Tensor g = grad.device() == out.device() ? grad : grad.to(out.device());
  if (n == 0) return out;
  dispatch_float(out.dtype(), "nll_loss_backward", [&](auto tag) {
    using T = decltype(tag);
    nll_backward_kernel<T><<<blocks_for(n), kThreads>>>(static_cast<const T*>(g.raw_data()),
                                                        static_cast<const int64_t*>(t.raw_data()),
                                                        static_cast<T*>(out.raw_data()), n, classes);
  });
  check_launch("nll_loss_backward");
  return out;
}

}  // namespace ddpscope::cuda_kernels
