// The CPU kernels (kernels.h): broadcasting binary ops, the scaled copy DDP writes
// averaged gradients back with, and reductions.
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

class TestKernels : public QObject {
  Q_OBJECT
 private slots:

  void testBroadcastBinary() {
    Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor row = Tensor::from_vector<float>({10, 20, 30}, {3});
    Tensor col = Tensor::from_vector<float>({100, 200}, {2, 1});
    QCOMPARE(kernels::binary(a, row, kernels::BinaryOp::Add).to_vector<float>(),
             (std::vector<float>{11, 22, 33, 14, 25, 36}));
    QCOMPARE(kernels::binary(a, col, kernels::BinaryOp::Mul).to_vector<float>(),
             (std::vector<float>{100, 200, 300, 800, 1000, 1200}));
    Tensor s = kernels::sum_to(kernels::binary(a, col, kernels::BinaryOp::Add), {2, 1});
    QCOMPARE(s.to_vector<float>(), (std::vector<float>{306, 615}));
  }

  // DDP writes averaged gradients back with copy_scaled: one fused pass for contiguous
  // f32/f64, and the copy-then-scale way for everything else.
  void testCopyScaled() {
    const Tensor src = Tensor::from_vector<float>({2, 4, 6, 8, 10, 12}, {2, 3});
    const Tensor dst = Tensor::zeros({2, 3}, DType::F32);
    const auto version = dst.storage()->version();
    kernels::copy_scaled(dst, src, 0.5);
    QCOMPARE(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    QVERIFY(dst.storage()->version() > version);  // saved tensors see the change
    const Tensor half = Tensor::zeros({2, 3}, DType::F16);
    kernels::copy_scaled(half, src, 0.25);
    QCOMPARE(half.to(DType::F32).to_vector<float>(), (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
    const Tensor strided = Tensor::zeros({3, 2}, DType::F32).transpose(0, 1);
    kernels::copy_scaled(strided, src, 2.0);
    QCOMPARE(strided.contiguous().to_vector<float>(), (std::vector<float>{4, 8, 12, 16, 20, 24}));
    bool refused = false;
    try {
      kernels::copy_scaled(Tensor::zeros({3}, DType::F32), src, 1.0);
    } catch (const std::exception& e) {
      refused = QString(e.what()).contains("does not match destination");
    }
    QVERIFY(refused);
  }

  void testReductions() {
    Tensor a = Tensor::arange(6, DType::F32).view({2, 3});
    QCOMPARE(kernels::sum(a).item<float>(), 15.0f);
    QCOMPARE(kernels::sum_dims(a, {0}, false).to_vector<float>(), (std::vector<float>{3, 5, 7}));
    QCOMPARE(kernels::sum_dims(a, {1}, true).sizes(), (Shape{2, 1}));
    QCOMPARE(kernels::sum_dims(a, {-1}, false).to_vector<float>(), (std::vector<float>{3, 12}));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestKernels)
#include "tst_kernels.moc"
