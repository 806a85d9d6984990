// What a reduction over the test ranks must give: rank r holds r + 1 + 0.25 * (i % 8) at
// element i (whole numbers for I64), so every element and every op has a known result.
#pragma once

#include <QtTest/QtTest>

#include <sys/resource.h>
#include <algorithm>
#include <numeric>
#include <cmath>
#include "c10d/process_group_mpi.h"
#include "mpi_test_main.h"
#include "tensor/kernels.h"

// The ops and dtypes the data-driven reduction cases take as columns.
Q_DECLARE_METATYPE(ddpscope::c10d::ReduceOp)
Q_DECLARE_METATYPE(ddpscope::DType)

namespace ddpscope::testing::reduce_expectations {

using namespace ddpscope::c10d;

// Rank r holds r + 1 + 0.25 i at element i (exact in every dtype for small sizes).
inline Tensor rank_tensor(int rank, int64_t n, DType dtype) {
  Tensor t = Tensor::empty({n}, DType::F64);
  for (int64_t i = 0; i < n; ++i)
    t.data<double>()[i] = rank + 1 + 0.25 * static_cast<double>(i % 8);
  return t.to(dtype);
}

inline double expected_reduce(ReduceOp op, int world, int64_t i, DType dtype) {
  const double frac = 0.25 * static_cast<double>(i % 8);
  auto value = [&](int r) {
    const double v = r + 1 + frac;
    return dtype == DType::I64 ? std::floor(v) : v;
  };
  double acc = op == ReduceOp::Product ? 1 : op == ReduceOp::Min ? 1e300 : op == ReduceOp::Max ? -1e300 : 0;
  for (int r = 0; r < world; ++r) {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc += value(r); break;
      case ReduceOp::Product: acc *= value(r); break;
      case ReduceOp::Min: acc = std::min(acc, value(r)); break;
      case ReduceOp::Max: acc = std::max(acc, value(r)); break;
    }
  }
  return op == ReduceOp::Avg ? acc / world : acc;
}

}  // namespace ddpscope::testing::reduce_expectations
