// State-dict files: a model saved and loaded back whole, a model of another shape refused
// by name and left untouched, corrupt and truncated files refused.
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

class TestStateDict : public QObject {
  Q_OBJECT
 private slots:

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

DDPSCOPE_TEST_GUILESS_MAIN(TestStateDict)
#include "tst_state_dict.moc"
