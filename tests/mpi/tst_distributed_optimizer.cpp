// DistributedOptimizer across real processes (2, 3 and 4 ranks under mpirun): SGD, Adam
// and AdamW over parameters on several workers end where one process ends, and a
// parameter that cannot be optimised is refused with its owner's error.
#include <QtTest/QtTest>

#include "dist_autograd_workers.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::testing::dist_autograd_workers;
using namespace std::chrono_literals;
using rpc::Value;
using rpc::ValueList;

class TestDistributedOptimizer : public WorldTest {
  Q_OBJECT

 private slots:

  void initTestCase() {
    join_world(g_world);
    start_worker(rank_);
  }

  void cleanupTestCase() { rpc::shutdown(true); }

  // DistributedOptimizer over parameters on worker 1, the last worker and worker 0 itself
  // ends where one process running the same optimizer on the same losses ends.
  void testDistributedOptimizerMatchesALocalRun() {
    try {
      if (rank_ == 0) optimizer_matches_a_local_run(size_);
    } catch (const std::exception& e) {
      QFAIL(e.what());
    }
    barrier();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestDistributedOptimizer)
#include "tst_distributed_optimizer.moc"
