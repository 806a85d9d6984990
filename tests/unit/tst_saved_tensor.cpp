// Saved tensors: an in-place change to a tensor that backward saved is reported, naming
// the node and the versions.
#include <QtTest/QtTest>

#include <thread>

#include "autograd/accumulate_grad.h"
#include "autograd/autograd_meta.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/graph_snapshot.h"
#include "autograd/ops.h"
#include "tensor/kernels.h"
#include "test_helpers.h"
#include "test_registry.h"

using namespace ddpscope;

using ddpscope::testing::leaf;

class TestSavedTensor : public QObject {
  Q_OBJECT
 private slots:

  void testInPlaceChangeOfSavedTensorIsReported() {
    Tensor x = leaf({1, 2});
    Tensor w = Tensor::from_vector<double>({3, 4}, {2});
    Tensor y = sum(mul(x, w));
    w.fill_(0);  // mul saved w for the gradient of x
    try {
      y.backward();
      QFAIL("backward must detect the in-place change");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("modified in place"), e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSavedTensor)
#include "tst_saved_tensor.moc"
