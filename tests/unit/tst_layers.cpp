// Layers against hand-computed values: Linear, LayerNorm, BatchNorm and its running
// statistics, dropout in training and evaluation.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <fstream>
#include <set>

#include "autograd/ops.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "test_helpers.h"
#include "test_registry.h"

using namespace ddpscope;

class TestLayers : public QObject {
  Q_OBJECT
 private slots:

  void testLinearByHand() {
    nn::Linear fc(2, 2);
    fc.weight().copy_(Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
    fc.bias().copy_(Tensor::from_vector<float>({0.5f, -1}, {2}));
    Tensor x = Tensor::from_vector<float>({1, 1, 2, 0}, {2, 2});
    Tensor y = fc.forward(x);
    QCOMPARE(y.to_vector<float>(), (std::vector<float>{3.5f, 6, 2.5f, 5}));
    sum(y).backward();
    QCOMPARE(fc.weight().grad().to_vector<float>(), (std::vector<float>{3, 1, 3, 1}));
    QCOMPARE(fc.bias().grad().to_vector<float>(), (std::vector<float>{2, 2}));
  }

  void testLayerNormByHand() {
    nn::LayerNorm ln(4);
    Tensor y = ln.forward(Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4}));
    // mean 2.5, biased variance 1.25
    const float s = 1.0f / std::sqrt(1.25f + 1e-5f);
    DDPSCOPE_COMPARE_TENSORS(y, Tensor::from_vector<float>({-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s}, {1, 4}), 1e-5,
                             0);
  }

  void testBatchNormRunningStatistics() {
    nn::BatchNorm1d bn(2, 1e-5, 0.1);
    Tensor x = Tensor::from_vector<float>({1, 10, 3, 20, 5, 30}, {3, 2});
    Tensor y = bn.forward(x);
    // Batch mean (3, 20); unbiased variance (4, 100).
    DDPSCOPE_COMPARE_TENSORS(bn.running_mean(), Tensor::from_vector<float>({0.3f, 2.0f}, {2}), 1e-6, 0);
    DDPSCOPE_COMPARE_TENSORS(bn.running_var(), Tensor::from_vector<float>({0.9f + 0.4f, 0.9f + 10.0f}, {2}), 1e-5, 0);
    // Normalised output has zero mean per feature.
    DDPSCOPE_COMPARE_TENSORS(kernels::sum_dims(y, {0}, false), Tensor::zeros({2}), 1e-5, 0);
    bn.eval();
    Tensor e = bn.forward(Tensor::from_vector<float>({0.3f, 2.0f}, {1, 2}));
    DDPSCOPE_COMPARE_TENSORS(e, Tensor::zeros({1, 2}), 1e-5, 0);
    QCOMPARE(bn.named_buffers().size(), size_t{3});
  }

  void testDropoutTrainAndEval() {
    Generator gen(5);
    nn::Dropout drop(0.5, &gen);
    Tensor x = Tensor::ones({1000});
    Tensor y = drop.forward(x);
    int zeros = 0;
    for (float v : y.to_vector<float>()) {
      QVERIFY(v == 0.0f || v == 2.0f);
      zeros += v == 0.0f;
    }
    QVERIFY(zeros > 400 && zeros < 600);
    drop.eval();
    QCOMPARE(drop.forward(x).to_vector<float>(), x.to_vector<float>());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLayers)
#include "tst_layers.moc"
