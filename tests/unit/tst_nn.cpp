// Modules: parameter order and names, layers against hand-computed values, BatchNorm
// running statistics, dropout, and state-dict files.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <fstream>
#include <set>

#include "autograd/ops.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "test_helpers.h"

using namespace ddpscope;

class TestNn : public QObject {
  Q_OBJECT
 private slots:
  void testParameterOrderFollowsRegistration() {
    nn::Mlp mlp({.in_features = 3, .width = 4, .depth = 3, .out_features = 2});
    std::vector<std::string> names;
    for (auto& [n, t] : mlp.named_parameters())
      names.push_back(n);
    QCOMPARE(names, (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias",
                                              "layers.4.weight", "layers.4.bias"}));
    // Tensors know their full name too (used by graphs and error messages).
    QCOMPARE(mlp.parameters()[2].name(), std::string("layers.2.weight"));
    QCOMPARE(mlp.num_parameters(), int64_t{3 * 4 + 4 + 4 * 4 + 4 + 4 * 2 + 2});
  }

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

  // replace_child: a Sequential runs the new child in its place, with the old one's name;
  // a module keeping the child in a member of its own refuses, naming it.
  void testReplaceChild() {
    Generator g(3);
    nn::Mlp mlp({.in_features = 4, .width = 6, .depth = 2, .out_features = 2}, &g);
    auto& layers = *mlp.children().front().second;
    auto fresh = std::make_shared<nn::Linear>(4, 6, false, &g);
    layers.replace_child("0", fresh);
    QCOMPARE(fresh->named_parameters().front().second.name(), std::string("layers.0.weight"));
    QCOMPARE(int(mlp.parameters().size()), 3);  // the new first layer has no bias
    const Tensor x = randn({3, 4}, DType::F32, &g);
    QCOMPARE(mlp.forward(x).sizes(), (std::vector<int64_t>{3, 2}));
    QVERIFY_THROWS_EXCEPTION(Error, layers.replace_child("9", std::make_shared<nn::ReLU>()));
    QVERIFY_THROWS_EXCEPTION(Error, layers.replace_child("1", fresh));  // already attached
    nn::CharTransformer t({.vocab_size = 8, .context = 4, .d_model = 8, .heads = 2, .layers = 1}, &g);
    try {
      t.replace_child("tok_emb", std::make_shared<nn::ReLU>());
      QFAIL("CharTransformer let its token table be replaced");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("CharTransformer keeps its child 'tok_emb'"), e.what());
    }
    QCOMPARE(t.children().front().second->type_name(), std::string("Embedding"));
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

  void testStateDictRoundTrip() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("model.state").toStdString();
    Generator g1(1), g2(2);
    nn::Mlp a({.in_features = 3, .width = 5, .depth = 2, .out_features = 1}, &g1);
    nn::Mlp b({.in_features = 3, .width = 5, .depth = 2, .out_features = 1}, &g2);
    QVERIFY(kernels::max_abs_diff(a.parameters()[0], b.parameters()[0]) > 0);
    a.save(path);
    b.load(path);
    for (size_t i = 0; i < a.parameters().size(); ++i) {
      QCOMPARE(kernels::max_abs_diff(a.parameters()[i], b.parameters()[i]), 0.0);
    }
    // A model of another shape is refused by name and left untouched.
    nn::Mlp c({.in_features = 3, .width = 6, .depth = 2, .out_features = 1}, &g2);
    const auto before = c.parameters()[0].to_vector<float>();
    try {
      c.load(path);
      QFAIL("loading mismatched shapes must fail");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("layers.0.weight"), e.what());
    }
    QCOMPARE(c.parameters()[0].to_vector<float>(), before);
  }

  void testCorruptStateFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("bad.state").toStdString();
    std::ofstream(path) << "not a state file";
    nn::Mlp m({});
    try {
      m.load(path);
      QFAIL("corrupt file must fail");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("not a ddpscope state file"), e.what());
    }
    // Truncated: a real file cut short.
    const std::string good = dir.filePath("good.state").toStdString();
    m.save(good);
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() - 10);
    QVERIFY_THROWS_EXCEPTION(Error, m.load(path));
  }
};

QTEST_GUILESS_MAIN(TestNn)
#include "tst_nn.moc"
