// Random tensors: the same seed gives the same values, another seed others.
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

class TestRandom : public QObject {
  Q_OBJECT
 private slots:

  void testSeededRandomIsDeterministic() {
    Generator g1(42), g2(42), g3(43);
    QCOMPARE(randn({16}, DType::F32, &g1).to_vector<float>(), randn({16}, DType::F32, &g2).to_vector<float>());
    QVERIFY(randn({16}, DType::F32, &g1).to_vector<float>() != randn({16}, DType::F32, &g3).to_vector<float>());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRandom)
#include "tst_random.moc"
