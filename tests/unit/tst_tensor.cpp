// Tensors: views share storage, flattening into a buffer and back, strided copies and
// contiguity, conversions, and clear errors for bad shapes.
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

class TestTensor : public QObject {
  Q_OBJECT
 private slots:

  void testViewsShareStorage() {
    Tensor a = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
    Tensor t = a.transpose(0, 1);
    QVERIFY(t.shares_storage_with(a));
    QVERIFY(!t.is_contiguous());
    QCOMPARE(t.at<float>({2, 1}), 5.0f);
    Tensor n = a.narrow(1, 1, 2);
    QCOMPARE(n.sizes(), (Shape{2, 2}));
    QCOMPARE(n.at<float>({1, 0}), 4.0f);
    n.fill_(9);  // writes through to a
    QCOMPARE(a.to_vector<float>(), (std::vector<float>{0, 9, 9, 3, 9, 9}));
    Tensor v = a.view({3, 2});
    QVERIFY(v.shares_storage_with(a));
    QCOMPARE(v.at<float>({2, 1}), 9.0f);
  }

  void testFlattenIntoBufferAndBack() {
    // What DDP does with a bucket: gradients copied into one flat buffer, then views.
    Tensor g1 = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
    Tensor g2 = Tensor::from_vector<float>({5, 6, 7}, {3});
    Tensor bucket = Tensor::zeros({7});
    bucket.narrow(0, 0, 4).view({2, 2}).copy_(g1);
    bucket.narrow(0, 4, 3).copy_(g2);
    QCOMPARE(bucket.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7}));
    Tensor view1 = bucket.narrow(0, 0, 4).view({2, 2});
    kernels::scale_(bucket, 0.5);
    QCOMPARE(view1.at<float>({1, 1}), 2.0f);
    QVERIFY(view1.shares_storage_with(bucket));
    QCOMPARE(view1.storage_offset(), int64_t{0});
    QCOMPARE(bucket.narrow(0, 4, 3).storage_offset(), int64_t{4});
  }

  void testStridedCopyAndContiguous() {
    Tensor a = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor c = a.transpose(0, 1).contiguous();
    QVERIFY(c.is_contiguous());
    QVERIFY(!c.shares_storage_with(a));
    QCOMPARE(c.to_vector<double>(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
    Tensor p = Tensor::arange(24, DType::F32).view({2, 3, 4}).permute({2, 0, 1}).contiguous();
    QCOMPARE(p.sizes(), (Shape{4, 2, 3}));
    QCOMPARE(p.at<float>({3, 1, 2}), 23.0f);
  }

  void testConversions_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("tolerance");
    QTest::newRow("f64") << "f64" << 0.0;
    QTest::newRow("f16") << "f16" << 1e-3;    // 10-bit mantissa
    QTest::newRow("bf16") << "bf16" << 8e-3;  // 7-bit mantissa
    QTest::newRow("i64") << "i64" << 0.5;
  }

  void testConversions() {
    QFETCH(QString, dtype);
    QFETCH(double, tolerance);
    Tensor a = Tensor::from_vector<float>({0.0f, 1.0f, -2.5f, 3.14159f, 1000.0f, -0.001f}, {6});
    Tensor back = a.to(dtype_from_name(dtype.toStdString())).to(DType::F32);
    const auto va = a.to_vector<float>(), vb = back.to_vector<float>();
    for (size_t i = 0; i < va.size(); ++i) {
      QVERIFY2(std::fabs(va[i] - vb[i]) <= tolerance * std::max(1.0f, std::fabs(va[i])),
               qPrintable(QString("%1 -> %2").arg(va[i]).arg(vb[i])));
    }
  }

  void testErrorsNameTheProblem_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("expected");
    QTest::newRow("view of non-contiguous") << 0 << "not contiguous";
    QTest::newRow("broadcast mismatch") << 1 << "cannot be broadcast";
    QTest::newRow("narrow out of range") << 2 << "outside dimension";
    QTest::newRow("gemm shapes") << 3 << "do not chain";
    QTest::newRow("storage dtype math") << 4 << "storage type";
    QTest::newRow("cuda without cuda") << 5 << "CUDA";
  }

  void testErrorsNameTheProblem() {
    QFETCH(int, which);
    QFETCH(QString, expected);
    Tensor a = Tensor::zeros({2, 3});
    try {
      switch (which) {
        case 0: a.transpose(0, 1).view({6}); break;
        case 1: kernels::binary(a, Tensor::zeros({4}), kernels::BinaryOp::Add); break;
        case 2: a.narrow(1, 2, 2); break;
        case 3: kernels::matmul(a, Tensor::zeros({2, 3})); break;
        case 4: kernels::unary(a.to(DType::F16), kernels::UnaryOp::Exp); break;
        case 5:
          if (cuda::available()) QSKIP("a GPU is present: the no-CUDA error cannot happen");
          a.to(Device::cuda(0));
          break;
      }
      QFAIL("no error was raised");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains(expected), e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTensor)
#include "tst_tensor.moc"
