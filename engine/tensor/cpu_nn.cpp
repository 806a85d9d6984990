// Neural-network kernels on the CPU: softmax family, layer norm, embedding, NLL loss.
// All of them work row by row over the last dimension of a contiguous input.
#include <cmath>
#include <limits>

#include "cuda_dispatch.h"
#include "kernels.h"

namespace ddpscope::kernels {
namespace {
struct Rows {
  int64_t count, width;
};
Rows rows_of(const Tensor& t, const char* op) {
  DDPSCOPE_CHECK(t.dim() >= 1, op, ": expected at least 1 dimension, got ", t.describe());
  const int64_t width = t.size(-1);
  return {width == 0 ? 0 : t.numel() / width, width};
}
}  // namespace

namespace {

// Applies fn(in_row, out_row, width) to every row of x over the last dimension.
template <typename Fn>
Tensor map_rows(const Tensor& x, const char* op, Fn&& fn) {
  const Tensor c = x.contiguous();
  Tensor out = Tensor::empty(x.sizes(), x.dtype(), x.device());
  const Rows r = rows_of(x, op);
  dispatch_compute(x.dtype(), op, [&]<typename T>() {
    for (int64_t i = 0; i < r.count; ++i)
      fn(c.data<T>() + i * r.width, out.data<T>() + i * r.width, r.width);
  });
  return out;
}

// Applies fn(grad_row, output_row, result_row, width) row by row.
template <typename Fn>
Tensor map_row_pairs(const Tensor& grad, const Tensor& output, const char* op, Fn&& fn) {
  const Tensor g = grad.contiguous(), y = output.contiguous();
  Tensor out = Tensor::empty(y.sizes(), y.dtype(), y.device());
  const Rows r = rows_of(y, op);
  dispatch_compute(y.dtype(), op, [&]<typename T>() {
    for (int64_t i = 0; i < r.count; ++i) {
      fn(g.data<T>() + i * r.width, y.data<T>() + i * r.width, out.data<T>() + i * r.width, r.width);
    }
  });
  return out;
}

// log(sum(exp(row))), shifted by the row maximum so large logits do not overflow.
template <typename T>
T log_sum_exp(const T* in, int64_t width) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < width; ++j)
    m = std::max(m, in[j]);
  T total = 0;
  for (int64_t j = 0; j < width; ++j)
    total += std::exp(in[j] - m);
  return m + std::log(total);
}

}  // namespace

Tensor softmax(const Tensor& x) {
  DDPSCOPE_ROUTE_CUDA(x, softmax(x));
  return map_rows(x, "softmax", []<typename T>(const T* in, T* o, int64_t width) {
    const T lse = log_sum_exp(in, width);
    for (int64_t j = 0; j < width; ++j)
      o[j] = std::exp(in[j] - lse);
  });
}

Tensor log_softmax(const Tensor& x) {
  DDPSCOPE_ROUTE_CUDA(x, log_softmax(x));
  return map_rows(x, "log_softmax", []<typename T>(const T* in, T* o, int64_t width) {
    const T lse = log_sum_exp(in, width);
    for (int64_t j = 0; j < width; ++j)
      o[j] = in[j] - lse;
  });
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output) {
  DDPSCOPE_ROUTE_CUDA(grad, softmax_backward(grad, output));
  // dx = y * (dy - sum(dy * y))
  return map_row_pairs(grad, output, "softmax_backward", []<typename T>(const T* gy, const T* y, T* o, int64_t width) {
    T dot = 0;
    for (int64_t j = 0; j < width; ++j)
      dot += gy[j] * y[j];
    for (int64_t j = 0; j < width; ++j)
      o[j] = y[j] * (gy[j] - dot);
  });
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& output) {
  DDPSCOPE_ROUTE_CUDA(grad, log_softmax_backward(grad, output));
  // dx = dy - exp(y) * sum(dy)
  return map_row_pairs(grad, output, "log_softmax_backward",
                       []<typename T>(const T* gy, const T* y, T* o, int64_t width) {
                         T total = 0;
                         for (int64_t j = 0; j < width; ++j)
                           total += gy[j];
                         for (int64_t j = 0; j < width; ++j)
                           o[j] = gy[j] - std::exp(y[j]) * total;
                       });
}

LayerNormResult layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  const Rows r = rows_of(x, "layer_norm");
  if (weight.defined()) {
    DDPSCOPE_CHECK(weight.numel() == r.width, "layer_norm: weight ", weight.describe(),
                   " does not match the last dimension of ", x.describe());
  }
  DDPSCOPE_ROUTE_CUDA(x, layer_norm(x, weight, bias, eps));
  const Tensor c = x.contiguous();
  LayerNormResult res{Tensor::empty(x.sizes(), x.dtype(), x.device()), Tensor::empty({r.count}, x.dtype(), x.device()),
                      Tensor::empty({r.count}, x.dtype(), x.device())};
  dispatch_compute(x.dtype(), "layer_norm", [&]<typename T>() {
    const T* w = weight.defined() ? weight.contiguous().data<T>() : nullptr;
    const T* b = bias.defined() ? bias.contiguous().data<T>() : nullptr;
    for (int64_t i = 0; i < r.count; ++i) {
      const T* in = c.data<T>() + i * r.width;
      T* o = res.output.data<T>() + i * r.width;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < r.width; ++j)
        mean += in[j];
      mean /= static_cast<double>(r.width);
      for (int64_t j = 0; j < r.width; ++j)
        var += (in[j] - mean) * (in[j] - mean);
      var /= static_cast<double>(r.width);
      const T rstd = static_cast<T>(1.0 / std::sqrt(var + eps));
      const T m = static_cast<T>(mean);
      for (int64_t j = 0; j < r.width; ++j) {
        const T xhat = (in[j] - m) * rstd;
        o[j] = xhat * (w ? w[j] : T(1)) + (b ? b[j] : T(0));
      }
      res.mean.data<T>()[i] = m;
      res.rstd.data<T>()[i] = rstd;
    }
  });
  return res;
}

LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& mean,
                                   const Tensor& rstd) {
  DDPSCOPE_ROUTE_CUDA(grad, layer_norm_backward(grad, x, weight, mean, rstd));
  const Tensor g = grad.contiguous(), c = x.contiguous();
  const Rows r = rows_of(x, "layer_norm_backward");
  LayerNormGrads out{Tensor::empty(x.sizes(), x.dtype(), x.device()), Tensor(), Tensor()};
  if (weight.defined()) {
    out.weight = Tensor::zeros({r.width}, x.dtype(), x.device());
    out.bias = Tensor::zeros({r.width}, x.dtype(), x.device());
  }
  dispatch_compute(x.dtype(), "layer_norm_backward", [&]<typename T>() {
    const T* w = weight.defined() ? weight.contiguous().data<T>() : nullptr;
    T* dw = w ? out.weight.data<T>() : nullptr;
    T* db = w ? out.bias.data<T>() : nullptr;
    for (int64_t i = 0; i < r.count; ++i) {
      const T* dy = g.data<T>() + i * r.width;
      const T* in = c.data<T>() + i * r.width;
      T* dx = out.input.data<T>() + i * r.width;
      const T m = mean.data<T>()[i], rs = rstd.data<T>()[i];
      // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * w.
      T sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int64_t j = 0; j < r.width; ++j) {
        const T xhat = (in[j] - m) * rs;
        const T dxhat = dy[j] * (w ? w[j] : T(1));
        sum_dxhat += dxhat;
        sum_dxhat_xhat += dxhat * xhat;
        if (w) {
          dw[j] += dy[j] * xhat;
          db[j] += dy[j];
        }
      }
      const T inv_n = T(1) / static_cast<T>(r.width);
      for (int64_t j = 0; j < r.width; ++j) {
        const T xhat = (in[j] - m) * rs;
        const T dxhat = dy[j] * (w ? w[j] : T(1));
        dx[j] = rs * (dxhat - sum_dxhat * inv_n - xhat * sum_dxhat_xhat * inv_n);
      }
    }
  });
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  DDPSCOPE_CHECK(weight.dim() == 2, "embedding: weight must be 2-D, got ", weight.describe());
  DDPSCOPE_CHECK(indices.dtype() == DType::I64, "embedding: indices must be i64, got ", indices.describe());
  DDPSCOPE_ROUTE_CUDA(weight, embedding(weight, indices));
  const int64_t num = weight.size(0), width = weight.size(1);
  Shape out_shape = indices.sizes();
  out_shape.push_back(width);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), weight.device());
  const Tensor idx = indices.contiguous(), w = weight.contiguous();
  dispatch_compute(weight.dtype(), "embedding", [&]<typename T>() {
    const int64_t* ip = idx.data<int64_t>();
    for (int64_t i = 0; i < idx.numel(); ++i) {
      DDPSCOPE_CHECK(ip[i] >= 0 && ip[i] < num, "embedding: index ", ip[i], " is out of range for a table of ", num,
                     " rows");
      std::copy_n(w.data<T>() + ip[i] * width, width, out.data<T>() + i * width);
    }
  });
  return out;
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  DDPSCOPE_ROUTE_CUDA(grad, embedding_backward(grad, indices, num_weights));
  const int64_t width = grad.size(-1);
  Tensor out = Tensor::zeros({num_weights, width}, grad.dtype(), grad.device());
  const Tensor idx = indices.contiguous(), g = grad.contiguous();
  dispatch_compute(grad.dtype(), "embedding_backward", [&]<typename T>() {
    const int64_t* ip = idx.data<int64_t>();
    for (int64_t i = 0; i < idx.numel(); ++i) {
      T* row = out.data<T>() + ip[i] * width;
      const T* gr = g.data<T>() + i * width;
      for (int64_t j = 0; j < width; ++j)
        row[j] += gr[j];
    }
  });
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& targets) {
  DDPSCOPE_CHECK(log_probs.dim() == 2, "nll_loss: expected log-probabilities [N, C], got ", log_probs.describe());
  DDPSCOPE_CHECK(targets.dtype() == DType::I64 && targets.dim() == 1 && targets.size(0) == log_probs.size(0),
                 "nll_loss: expected i64 targets [", log_probs.size(0), "], got ", targets.describe());
  DDPSCOPE_ROUTE_CUDA(log_probs, nll_loss(log_probs, targets));
  const Tensor lp = log_probs.contiguous(), t = targets.contiguous();
  const int64_t n = lp.size(0), classes = lp.size(1);
  return dispatch_compute(lp.dtype(), "nll_loss", [&]<typename T>() {
    double total = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = t.data<int64_t>()[i];
      DDPSCOPE_CHECK(c >= 0 && c < classes, "cross-entropy: target ", c, " at row ", i, " is outside the ", classes,
                     " classes");
      total -= lp.data<T>()[i * classes + c];
    }
    return Tensor::scalar(n ? total / static_cast<double>(n) : 0.0, lp.dtype());
  });
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets) {
  DDPSCOPE_ROUTE_CUDA(log_probs, nll_loss_backward(grad, log_probs, targets));
  const int64_t n = log_probs.size(0), classes = log_probs.size(1);
  Tensor out = Tensor::zeros(log_probs.sizes(), log_probs.dtype(), log_probs.device());
  const Tensor t = targets.contiguous();
  dispatch_compute(log_probs.dtype(), "nll_loss_backward", [&]<typename T>() {
    const T g = static_cast<T>(grad.item<double>() / static_cast<double>(n));
    for (int64_t i = 0; i < n; ++i)
      out.data<T>()[i * classes + t.data<int64_t>()[i]] = -g;
  });
  return out;
}

}  // namespace ddpscope::kernels
