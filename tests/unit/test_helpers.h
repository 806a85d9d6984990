// Shared helpers for the unit tests: tensor comparison with a readable failure message.
#pragma once

#include <QtTest/QtTest>
#include <cmath>

#include "tensor/kernels.h"
#include "tensor/tensor.h"

namespace ddpscope::testing {

// max |a - b| / max |b| (the tensors on any device, of equal size; 1e9 when they differ).
inline double relative_error(const Tensor& a, const Tensor& b) {
  const auto va = a.to(Device::cpu()).to_vector<double>(), vb = b.to(Device::cpu()).to_vector<double>();
  if (va.size() != vb.size()) return 1e9;
  double diff = 0, scale = 1e-12;
  for (size_t i = 0; i < va.size(); ++i) {
    diff = std::max(diff, std::fabs(va[i] - vb[i]));
    scale = std::max(scale, std::fabs(vb[i]));
  }
  return diff / scale;
}

inline bool all_close(const Tensor& a, const Tensor& b, double atol, double rtol, QString* why = nullptr) {
  if (a.sizes() != b.sizes()) {
    if (why) *why = QString("shape %1 vs %2").arg(a.describe().c_str(), b.describe().c_str());
    return false;
  }
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) {
    if (!(std::fabs(va[i] - vb[i]) <= atol + rtol * std::fabs(vb[i]))) {
      if (why) *why = QString("element %1: %2 vs %3").arg(i).arg(va[i], 0, 'g', 10).arg(vb[i], 0, 'g', 10);
      return false;
    }
  }
  return true;
}

// A 1-D f64 leaf that requires grad, for hand-checked autograd cases.
inline Tensor leaf(std::vector<double> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<double>(v, {n}).set_requires_grad(true);
}

}  // namespace ddpscope::testing

#define DDPSCOPE_COMPARE_TENSORS(a, b, atol, rtol)                                               \
  do {                                                                                           \
    QString why_;                                                                                \
    QVERIFY2(::ddpscope::testing::all_close((a), (b), (atol), (rtol), &why_), qPrintable(why_)); \
  } while (0)
