// The ring allreduce under mpirun (2 and 4 ranks), as a group that asked for it uses it:
// every element right for sizes from 1 element to 1M + 7, f32 and f64, sum and average,
// coalesced; other reduce ops go to MPI's own allreduce.
#include <QtTest/QtTest>

#include "reduce_expectations.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::c10d;
using namespace ddpscope::testing::reduce_expectations;

class TestRingAllreduce : public QObject {
  Q_OBJECT
  std::shared_ptr<ProcessGroup> pg_;

 private slots:

  void initTestCase() {
    pg_ = init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(120)});
    QCOMPARE(pg_->size(), MpiEnvironment::world_size());
    QCOMPARE(pg_->backend_name(), std::string("mpi"));
  }

  // The ring allreduce that groups spanning hosts use (forced here on one host with
  // DDPSCOPE_MPI_RING=1): exact sums and means for any element count (fewer elements
  // than ranks, counts that do not divide, several segments), f32 and f64, and the
  // coalesced form; other ops and dtypes still reduce correctly (through MPI).
  void testRingAllreduce() {
    std::vector<int> everyone(static_cast<size_t>(pg_->size()));
    std::iota(everyone.begin(), everyone.end(), 0);
    qputenv("DDPSCOPE_MPI_RING", "1");
    auto ring = std::dynamic_pointer_cast<ProcessGroupMPI>(pg_->new_group(everyone));
    qunsetenv("DDPSCOPE_MPI_RING");
    QVERIFY(ring && ring->uses_ring());
    QVERIFY(!std::dynamic_pointer_cast<ProcessGroupMPI>(pg_)->uses_ring());  // one host: MPI's
    // One host: its ranks meet on the shared futex board; the ring's group, treated as
    // spanning hosts, keeps the polled barrier's place (it waits inside the ring).
    QVERIFY(std::dynamic_pointer_cast<ProcessGroupMPI>(pg_)->uses_arrival_board());
    QVERIFY(!ring->uses_arrival_board());
    for (DType dtype : {DType::F32, DType::F64}) {
      for (int64_t numel : {int64_t{1}, int64_t{3}, int64_t{37}, int64_t{1000}, (int64_t{1} << 20) + 7}) {
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
          Tensor t = rank_tensor(pg_->rank(), numel, dtype);
          ring->allreduce(t, {.op = op})->wait();
          // Every element: a segment sent into the wrong place shows up nowhere else.
          const auto got = t.to_vector<double>();
          int64_t wrong = 0, first = -1;
          for (int64_t i = 0; i < numel; ++i) {
            const double want = expected_reduce(op, pg_->size(), i, dtype);
            if (std::fabs(got[i] - want) > 1e-6 * std::max(1.0, std::fabs(want)) && wrong++ == 0) first = i;
          }
          QVERIFY2(wrong == 0,
                   qPrintable(QString("%1 %2 elements: %3 wrong, the first element %4: got %5, want %6")
                                  .arg(dtype_name(dtype))
                                  .arg(numel)
                                  .arg(wrong)
                                  .arg(first)
                                  .arg(first >= 0 ? got[first] : 0.0)
                                  .arg(expected_reduce(op, pg_->size(), std::max<int64_t>(first, 0), dtype))));
        }
      }
    }
    Tensor a = rank_tensor(pg_->rank(), 5, DType::F32), b = rank_tensor(pg_->rank(), 300001, DType::F32);
    ring->allreduce_coalesced({a, b}, {.op = ReduceOp::Sum})->wait();
    QCOMPARE(a.to_vector<double>()[4], expected_reduce(ReduceOp::Sum, pg_->size(), 4, DType::F32));
    QCOMPARE(b.to_vector<double>()[300000], expected_reduce(ReduceOp::Sum, pg_->size(), 300000, DType::F32));
    Tensor m = rank_tensor(pg_->rank(), 37, DType::F32);
    ring->allreduce(m, {.op = ReduceOp::Max})->wait();  // not the ring's: MPI_Allreduce
    QCOMPARE(m.to_vector<double>()[36], expected_reduce(ReduceOp::Max, pg_->size(), 36, DType::F32));
  }

  void cleanupTestCase() {
    pg_->barrier()->wait();
    pg_.reset();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestRingAllreduce)
#include "tst_ring_allreduce.moc"
