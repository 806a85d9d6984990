// The watch for losses and gradients that are not finite: the first NaN or infinite loss
// is reported once, the first parameter whose gradient is not finite is named (those
// without a gradient skipped), and after the first of each nothing more is reported.
#include <QtTest/QtTest>

#include <cmath>
#include <limits>

#include "apps/nonfinite_watch.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::apps;

class TestNonfiniteWatch : public QObject {
  Q_OBJECT

 private slots:
  void testTheFirstLossIsReportedOnce() {
    NonFiniteWatch watch;
    QVERIFY(!watch.check_loss(1, 0.5));
    QVERIFY(watch.check_loss(2, std::numeric_limits<double>::quiet_NaN()));
    QVERIFY(!watch.check_loss(3, std::numeric_limits<double>::infinity()));  // already said
  }

  void testTheFirstParameterIsNamed() {
    NonFiniteWatch watch;
    // Parameters whose gradients are given: fc1's holds an infinity, fc2's a NaN; fc3 has none.
    const auto param = [](float bad_value, int at) {
      Tensor p = Tensor::full({4}, 1.0);
      Tensor g = Tensor::full({4}, 1.0);
      if (at >= 0) g.data<float>()[at] = bad_value;
      p.set_grad(g);
      return p;
    };
    const Tensor fine = param(0, -1), inf = param(std::numeric_limits<float>::infinity(), 2),
                 nan = param(std::numeric_limits<float>::quiet_NaN(), 0), none = Tensor::full({4}, 1.0);
    QVERIFY(!watch.check_gradients(1, {{"fc0.weight", fine}, {"fc3.weight", none}}));
    QVERIFY(watch.check_gradients(2, {{"fc0.weight", fine}, {"fc1.weight", inf}, {"fc2.weight", nan}}));
    QCOMPARE(watch.gradient_parameter(), std::string("fc1.weight"));
    QVERIFY(!watch.check_gradients(3, {{"fc2.weight", nan}}));  // said once
    QCOMPARE(watch.gradient_parameter(), std::string("fc1.weight"));
  }

  void testAllFinite() {
    QVERIFY(all_finite(Tensor::full({3}, 2.0)));
    Tensor t = Tensor::full({3}, 2.0, DType::F64);
    t.data<double>()[1] = -std::numeric_limits<double>::infinity();
    QVERIFY(!all_finite(t));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestNonfiniteWatch)
#include "tst_nonfinite_watch.moc"
