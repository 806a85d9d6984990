// End-to-end training in one process: each model must bring its loss below a stated
// threshold within a fixed number of steps, the digits run too, and the same seed gives
// the same run.
#include <QtTest/QtTest>

#include <zlib.h>
#include <QTemporaryDir>

#include "apps/trainer.h"
#include "nn/datasets.h"
#include "test_registry.h"

using namespace ddpscope;

namespace {
double train(apps::TrainOptions o, double* first_loss = nullptr) {
  apps::Trainer t(o);
  double loss = 0;
  for (int64_t i = 0; i < o.iters; ++i) {
    loss = t.step().loss;
    if (i == 0 && first_loss) *first_loss = loss;
  }
  return loss;
}
}  // namespace

class TestTrainer : public QObject {
  Q_OBJECT
 private slots:

  void testMlpRegressionConverges() {
    double first = 0;
    const double last = train({.model = "mlp", .iters = 300, .batch = 64, .width = 64, .depth = 3}, &first);
    qInfo("mlp regression: loss %.4f -> %.4f", first, last);
    QVERIFY2(last < 0.06, qPrintable(QString("final loss %1 (threshold 0.06)").arg(last)));
    QVERIFY(last < first / 4);
  }

  void testMlpClassificationConverges() {
    double first = 0;
    const double last =
        train({.model = "mlp", .data = "classification", .iters = 200, .batch = 64, .width = 64, .depth = 2}, &first);
    qInfo("mlp classification: loss %.4f -> %.4f", first, last);
    QVERIFY2(last < 0.3, qPrintable(QString("final loss %1 (threshold 0.3)").arg(last)));
  }

  void testTransformerConverges() {
    double first = 0;
    const double last = train({.model = "transformer",
                               .iters = 150,
                               .batch = 8,
                               .width = 32,
                               .depth = 1,
                               .heads = 2,
                               .context = 16,
                               .seed = 1},
                              &first);
    qInfo("transformer: loss %.4f -> %.4f", first, last);
    // Uniform guessing over ~45 characters is ln(45) = 3.8 nats.
    QVERIFY2(last < 2.6, qPrintable(QString("final loss %1 (threshold 2.6)").arg(last)));
  }

  void testDigitsTraining() {
    if (nn::default_digits_path().empty()) QSKIP("python3-sklearn's digits.csv.gz is not installed");
    nn::Dataset d = nn::load_digits(nn::default_digits_path());
    QCOMPARE(d.size(), int64_t{1797});
    double first = 0;
    const double last =
        train({.model = "mlp", .data = "digits", .iters = 300, .batch = 64, .width = 64, .depth = 2}, &first);
    qInfo("digits: loss %.4f -> %.4f", first, last);
    QVERIFY2(last < 0.4, qPrintable(QString("final loss %1 (threshold 0.4)").arg(last)));
  }

  void testSameSeedSameRun() {
    const double a = train({.model = "mlp", .iters = 5, .seed = 9});
    const double b = train({.model = "mlp", .iters = 5, .seed = 9});
    const double c = train({.model = "mlp", .iters = 5, .seed = 10});
    QCOMPARE(a, b);
    QVERIFY(a != c);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTrainer)
#include "tst_trainer.moc"
