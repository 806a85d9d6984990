// Process groups under mpirun (2 and 4 ranks): subgroups made from the world (null on a
// rank outside them), and argument errors named, an unknown backend among them.
#include <QtTest/QtTest>

#include "reduce_expectations.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::c10d;
using namespace ddpscope::testing::reduce_expectations;

class TestProcessGroup : public QObject {
  Q_OBJECT
  std::shared_ptr<ProcessGroup> pg_;

 private slots:

  void initTestCase() {
    pg_ = init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(120)});
    QCOMPARE(pg_->size(), MpiEnvironment::world_size());
    QCOMPARE(pg_->backend_name(), std::string("mpi"));
  }

  void testSubgroups() {
    auto pair = pg_->new_group({1, 0});
    if (pg_->rank() > 1) {
      QVERIFY(pair == nullptr);
    } else {
      QVERIFY(pair != nullptr);
      QCOMPARE(pair->size(), 2);
      QCOMPARE(pair->rank(), pg_->rank() == 1 ? 0 : 1);               // renumbered in the order given
      QCOMPARE(pair->options().name, pg_->options().name + "[1,0]");  // errors name it
      Tensor t = Tensor::full({2}, pg_->rank() + 1.0);
      pair->allreduce(t)->wait();
      QCOMPARE(t.at<float>({0}), 3.0f);
    }
    // The parent keeps working, interleaved with the subgroup.
    Tensor all = Tensor::ones({1});
    pg_->allreduce(all)->wait();
    QCOMPARE(all.item<float>(), float(pg_->size()));
  }

  void testBadArguments_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("expected");
    QTest::newRow("wrong output count") << 0 << "has 1 tensors but group";
    QTest::newRow("rank outside group") << 1 << "outside group";
    QTest::newRow("unknown backend") << 2 << "unknown backend 'gloo'";
    QTest::newRow("mismatched shapes in list") << 3 << "must match";
    QTest::newRow("non-contiguous") << 4 << "not contiguous";
    QTest::newRow("avg of integers") << 5 << "avg needs a floating dtype";
    QTest::newRow("send to self") << 6 << "is this rank";
    QTest::newRow("coalesced broadcast without a root each") << 7 << "2 tensors but 1 roots";
    QTest::newRow("coalesced broadcast of two dtypes") << 8 << "coalesce one dtype at a time";
  }

  void testBadArguments() {
    QFETCH(int, which);
    QFETCH(QString, expected);
    Tensor t = Tensor::zeros({4});
    try {
      switch (which) {
        case 0: pg_->allgather({t}, t); break;
        case 1: pg_->broadcast(t, {.root = pg_->size()}); break;
        case 2: init_process_group({.backend = "gloo"}); break;
        case 3: {
          std::vector<Tensor> outs(pg_->size(), Tensor::zeros({5}));
          pg_->allgather(outs, t);
          break;
        }
        case 4: pg_->allreduce(Tensor::zeros({4, 4}).transpose(0, 1)); break;
        case 5: pg_->allreduce(Tensor::zeros({4}, DType::I64), {.op = ReduceOp::Avg}); break;
        case 6: pg_->send(t, pg_->rank()); break;
        case 7: pg_->broadcast_coalesced({t, t}, {0}); break;
        case 8: pg_->broadcast_coalesced({t, Tensor::zeros({4}, DType::F64)}, {0, 0}); break;
      }
      if (which == 0 && pg_->size() == 1) QSKIP("a world of one accepts one output");
      QFAIL("no error raised");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains(expected), e.what());
    }
  }

  void cleanupTestCase() {
    pg_->barrier()->wait();
    pg_.reset();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestProcessGroup)
#include "tst_process_group.moc"
