// The models the examples train: a causal character transformer with many parameter
// sizes, and an MLP with BatchNorm.
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

class TestModels : public QObject {
  Q_OBJECT
 private slots:

  void testTransformerHasManyParameterSizes() {
    nn::CharTransformer lm({.vocab_size = 20, .context = 8, .d_model = 16, .heads = 2, .layers = 2});
    std::set<int64_t> sizes;
    for (auto& t : lm.parameters())
      sizes.insert(t.numel());
    QVERIFY(sizes.size() >= 6);
    Tensor idx = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3});
    QCOMPARE(lm.forward(idx).sizes(), (Shape{2, 3, 20}));
    // Causality: changing a later token must not change earlier logits.
    Tensor idx2 = idx.clone();
    idx2.data<int64_t>()[2] = 9;
    Tensor a = lm.forward(idx), b = lm.forward(idx2);
    DDPSCOPE_COMPARE_TENSORS(a.narrow(1, 0, 2).contiguous(), b.narrow(1, 0, 2).contiguous(), 1e-6, 0);
    QVERIFY(kernels::max_abs_diff(a.narrow(1, 2, 1).contiguous(), b.narrow(1, 2, 1).contiguous()) > 1e-4);
  }

  // --batch-norm's MLP: Linear -> BatchNorm1d -> ReLU per hidden layer; skipping the
  // second layer skips its norm too.
  void testMlpWithBatchNorm() {
    Generator g(3);
    nn::Mlp mlp({.in_features = 4, .width = 6, .depth = 3, .out_features = 2, .batch_norm = true}, &g);
    std::vector<std::string> names;
    for (const auto& [name, t] : mlp.named_parameters())
      names.push_back(name);
    QCOMPARE(names, (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                                              "layers.3.weight", "layers.3.bias", "layers.4.weight", "layers.4.bias",
                                              "layers.6.weight", "layers.6.bias"}));
    const Tensor x = randn({5, 4}, DType::F32, &g);
    QCOMPARE(mlp.forward(x).sizes(), (std::vector<int64_t>{5, 2}));
    mlp.skip_second_layer(true);
    QCOMPARE(mlp.forward(x).sizes(), (std::vector<int64_t>{5, 2}));
    nn::Mlp shallow({.in_features = 4, .width = 6, .depth = 2, .batch_norm = true}, &g);
    QVERIFY_THROWS_EXCEPTION(Error, shallow.skip_second_layer(true));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestModels)
#include "tst_models.moc"
