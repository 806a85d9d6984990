// BLAS-backed kernels: GEMM in every transpose layout against a hand loop.
#include <QtTest/QtTest>

#include "ddpscope/bucket_rule.h"
#include "tensor/blas_kernels.h"
#include "tensor/cuda_runtime_facade.h"
#include "tensor/kernels.h"
#include "tensor/random.h"
#include "tensor/tensor.h"
#include "tensor/threads.h"
#include "test_registry.h"

extern "C" int openblas_get_num_threads(void);
#include "test_helpers.h"

using namespace ddpscope;

class TestBlasKernels : public QObject {
  Q_OBJECT
 private slots:

  void testGemmLayouts() {
    Generator gen(3);
    Tensor a = randn({5, 4}, DType::F64, &gen), b = randn({4, 3}, DType::F64, &gen);
    Tensor expected = Tensor::zeros({5, 3}, DType::F64);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j) {
        double acc = 0;
        for (int k = 0; k < 4; ++k)
          acc += a.at<double>({i, k}) * b.at<double>({k, j});
        expected.data<double>()[i * 3 + j] = acc;
      }
    DDPSCOPE_COMPARE_TENSORS(kernels::matmul(a, b), expected, 1e-12, 0);
    // Transposed views go to BLAS as transposed operands.
    Tensor at = a.transpose(0, 1).contiguous().transpose(0, 1);
    Tensor bt = b.transpose(0, 1).contiguous().transpose(0, 1);
    DDPSCOPE_COMPARE_TENSORS(kernels::matmul(at, bt), expected, 1e-12, 0);
    // A non-matrix stride (every other column) falls back to a copy.
    Tensor wide = randn({5, 8}, DType::F64, &gen);
    Tensor strided = wide.as_strided({5, 4}, {8, 2}, 0);
    DDPSCOPE_COMPARE_TENSORS(kernels::matmul(strided, b), kernels::matmul(strided.contiguous(), b), 1e-12, 0);
    // Output written into a view of a larger buffer, with beta accumulation.
    Tensor big = Tensor::ones({5, 6}, DType::F64);
    kernels::gemm(a, b, big.narrow(1, 0, 3), 1.0, 1.0);
    QCOMPARE(big.at<double>({4, 2}), expected.at<double>({4, 2}) + 1.0);
    QCOMPARE(big.at<double>({4, 3}), 1.0);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestBlasKernels)
#include "tst_blas_kernels.moc"
