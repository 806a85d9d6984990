// Kernel threads: the thread count reaches OpenBLAS, and the core choice respects what
// the user set.
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

class TestThreads : public QObject {
  Q_OBJECT
 private slots:

  void testThreadCountReachesBlas() {
    set_num_threads(2);
    QCOMPARE(get_num_threads(), 2);
    QCOMPARE(openblas_get_num_threads(), 2);
    set_num_threads(1);
    QCOMPARE(openblas_get_num_threads(), 1);
    QVERIFY_THROWS_EXCEPTION(Error, set_num_threads(0));
  }

  void testBlasCoreChoiceRespectsTheUser() {
    QVERIFY(!openblas_core().empty());
    qputenv("OPENBLAS_CORETYPE", "HASWELL");
    QCOMPARE(preferred_openblas_core(), std::string());  // the user's choice wins
    qunsetenv("OPENBLAS_CORETYPE");
    const std::string preferred = preferred_openblas_core();
    QVERIFY(preferred.empty() || preferred == "SKYLAKEX" || preferred == "HASWELL");
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestThreads)
#include "tst_threads.moc"
