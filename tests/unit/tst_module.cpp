// nn::Module: parameters in registration order with their full names, and a child
// replaced in place.
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

class TestModule : public QObject {
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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestModule)
#include "tst_module.moc"
