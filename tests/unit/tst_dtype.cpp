// Element types: names and sizes, IEEE half and bfloat16 at their limits, and 16-bit
// gradients that accumulate and scale through f32.
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

class TestDtype : public QObject {
  Q_OBJECT
 private slots:

  // The run file's dtype names carry the engine's element sizes: bucket advice sizes
  // gradients by them.
  void testDtypeNamesCarryElementSizes() {
    for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64})
      QCOMPARE(ddpscope::dtype_name_bytes(dtype_name(d)), static_cast<int64_t>(element_size(d)));
  }

  void testHalfSpecialValues() {
    QCOMPARE(half_bits_to_float(float_to_half_bits(65504.0f)), 65504.0f);  // max half
    QVERIFY(std::isinf(half_bits_to_float(float_to_half_bits(1e6f))));
    QCOMPARE(half_bits_to_float(float_to_half_bits(5.960464477539063e-8f)), 5.960464477539063e-8f);
    QVERIFY(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
    QCOMPARE(bf16_bits_to_float(float_to_bf16_bits(1.0f)), 1.0f);
  }

  void testHalfGradientArithmetic() {
    // Gradients kept in f16/bf16 accumulate and scale through f32.
    for (DType d : {DType::F16, DType::BF16}) {
      Tensor g = Tensor::full({3}, 1.5, d);
      kernels::add_(g, Tensor::full({3}, 0.25, d), 2.0);
      kernels::scale_(g, 0.5);
      QCOMPARE(g.dtype(), d);
      QCOMPARE(g.at<float>({2}), 1.0f);
    }
    QVERIFY_THROWS_EXCEPTION(Error, kernels::add_(Tensor::zeros({2}, DType::F16), Tensor::zeros({2})));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestDtype)
#include "tst_dtype.moc"
