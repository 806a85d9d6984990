// ProcessGroupMPI under mpirun (2 and 4 ranks): every op and reduce op, every dtype,
// sizes from 1 element to 64M, ordering of many ops in flight, futures, subgroups, and
// argument errors.
#include <sys/resource.h>

#include <QtTest/QtTest>

#include <algorithm>
#include <numeric>
#include <cmath>

#include "c10d/process_group_mpi.h"
#include "mpi_test_main.h"
#include "tensor/kernels.h"

using namespace ddpscope;
using namespace ddpscope::c10d;

Q_DECLARE_METATYPE(ddpscope::c10d::ReduceOp)
Q_DECLARE_METATYPE(ddpscope::DType)

namespace {
// Rank r holds r + 1 + 0.25 i at element i (exact in every dtype for small sizes).
Tensor rank_tensor(int rank, int64_t n, DType dtype) {
  Tensor t = Tensor::empty({n}, DType::F64);
  for (int64_t i = 0; i < n; ++i)
    t.data<double>()[i] = rank + 1 + 0.25 * static_cast<double>(i % 8);
  return t.to(dtype);
}

double expected_reduce(ReduceOp op, int world, int64_t i, DType dtype) {
  const double frac = 0.25 * static_cast<double>(i % 8);
  auto value = [&](int r) {
    const double v = r + 1 + frac;
    return dtype == DType::I64 ? std::floor(v) : v;
  };
  double acc = op == ReduceOp::Product ? 1 : op == ReduceOp::Min ? 1e300 : op == ReduceOp::Max ? -1e300 : 0;
  for (int r = 0; r < world; ++r) {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: acc += value(r); break;
      case ReduceOp::Product: acc *= value(r); break;
      case ReduceOp::Min: acc = std::min(acc, value(r)); break;
      case ReduceOp::Max: acc = std::max(acc, value(r)); break;
    }
  }
  return op == ReduceOp::Avg ? acc / world : acc;
}
}  // namespace

class TestProcessGroupMpi : public QObject {
  Q_OBJECT
  std::shared_ptr<ProcessGroup> pg_;

 private slots:
  void initTestCase() {
    pg_ = init_process_group({.backend = "mpi", .timeout = std::chrono::seconds(120)});
    QCOMPARE(pg_->size(), MpiEnvironment::world_size());
    QCOMPARE(pg_->backend_name(), std::string("mpi"));
  }

  void testAllreduce_data() {
    QTest::addColumn<ReduceOp>("op");
    QTest::addColumn<DType>("dtype");
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Min, ReduceOp::Max, ReduceOp::Product}) {
      for (DType d : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64}) {
        if (op == ReduceOp::Avg && d == DType::I64) continue;
        QTest::newRow(qPrintable(QString("%1 %2").arg(reduce_op_name(op), dtype_name(d)))) << op << d;
      }
    }
  }
  void testAllreduce() {
    QFETCH(ReduceOp, op);
    QFETCH(DType, dtype);
    Tensor t = rank_tensor(pg_->rank(), 37, dtype);
    pg_->allreduce(t, {.op = op})->wait();
    const auto got = t.to_vector<double>();
    const double tol = (dtype == DType::F16 || dtype == DType::BF16) ? 0.02 : 1e-6;
    for (int64_t i = 0; i < 37; ++i) {
      const double want = expected_reduce(op, pg_->size(), i, dtype);
      QVERIFY2(std::fabs(got[i] - want) <= tol * std::max(1.0, std::fabs(want)),
               qPrintable(QString("element %1: got %2, want %3").arg(i).arg(got[i]).arg(want)));
    }
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

  void testSizes_data() {
    QTest::addColumn<qint64>("numel");
    for (qint64 n : {1LL, 1000LL, 1LL << 20, 1LL << 26})
      QTest::newRow(qPrintable(QString::number(n))) << n;
  }
  void testSizes() {
    QFETCH(qint64, numel);
    Tensor t = Tensor::full({numel}, pg_->rank() + 1.0);
    pg_->allreduce(t)->wait();
    const float want = static_cast<float>(pg_->size() * (pg_->size() + 1) / 2);
    const float* p = t.data<float>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < numel; ++i)
      wrong += p[i] != want;
    QCOMPARE(wrong, int64_t{0});
  }

  void testBroadcastFromEveryRoot() {
    for (int root = 0; root < pg_->size(); ++root) {
      Tensor t = Tensor::full({5}, pg_->rank() == root ? 42.0 + root : -1.0, DType::I64);
      pg_->broadcast(t, {.root = root})->wait();
      QCOMPARE(t.to_vector<int64_t>(), std::vector<int64_t>(5, 42 + root));
    }
  }

  void testBroadcastCoalescedTakesEachTensorFromItsRoot() {
    // Sizes from 1 element to 1M, each from a different root, all in one op; a plain
    // broadcast queued behind it still completes after it.
    std::vector<Tensor> tensors;
    std::vector<int> roots;
    for (int i = 0; i < 6; ++i) {
      const int root = (i * 3 + 1) % pg_->size();
      const int64_t numel = int64_t{1} << (i * 4);
      tensors.push_back(Tensor::full({numel}, pg_->rank() == root ? 100.0 * root + i : -1.0));
      roots.push_back(root);
    }
    Tensor after = Tensor::full({3}, pg_->rank() == 0 ? 7.0 : 0.0);
    auto work = pg_->broadcast_coalesced(tensors, roots);
    auto behind = pg_->broadcast(after, {.root = 0});
    behind->wait();
    QVERIFY(work->is_completed());
    for (int i = 0; i < 6; ++i) {
      const auto got = tensors[i].to_vector<float>();
      const float want = static_cast<float>(100.0 * roots[i] + i);
      QVERIFY2(std::all_of(got.begin(), got.end(), [&](float v) { return v == want; }),
               qPrintable(QString("tensor %1 from root %2").arg(i).arg(roots[i])));
    }
    QCOMPARE(after.to_vector<float>(), std::vector<float>(3, 7.0f));
  }

  void testAllgather() {
    Tensor in = Tensor::full({2, 3}, pg_->rank() * 10.0, DType::F64);
    std::vector<Tensor> out;
    for (int r = 0; r < pg_->size(); ++r)
      out.push_back(Tensor::zeros({2, 3}, DType::F64));
    pg_->allgather(out, in)->wait();
    for (int r = 0; r < pg_->size(); ++r)
      QCOMPARE(out[r].to_vector<double>(), std::vector<double>(6, r * 10.0));
  }

  void testReduceScatter() {
    std::vector<Tensor> in;
    for (int r = 0; r < pg_->size(); ++r)
      in.push_back(Tensor::full({4}, (pg_->rank() + 1.0) * (r + 1)));
    Tensor out = Tensor::zeros({4});
    pg_->reduce_scatter(out, in)->wait();
    const int n = pg_->size();
    QCOMPARE(out.to_vector<float>(), std::vector<float>(4, float(n * (n + 1) / 2 * (pg_->rank() + 1))));
  }

  void testAlltoall() {
    std::vector<Tensor> in, out;
    for (int r = 0; r < pg_->size(); ++r) {
      in.push_back(Tensor::full({3}, pg_->rank() * 100.0 + r, DType::I64));
      out.push_back(Tensor::zeros({3}, DType::I64));
    }
    pg_->alltoall(out, in)->wait();
    for (int r = 0; r < pg_->size(); ++r) {
      QCOMPARE(out[r].to_vector<int64_t>(), std::vector<int64_t>(3, r * 100 + pg_->rank()));
    }
  }

  void testCoalesced() {
    Tensor a = Tensor::full({3}, 1.0), b = Tensor::full({2, 2}, 2.0);
    pg_->allreduce_coalesced({a, b}, {.op = ReduceOp::Avg})->wait();
    QCOMPARE(a.to_vector<float>(), std::vector<float>(3, 1.0f));
    QCOMPARE(b.to_vector<float>(), std::vector<float>(4, 2.0f));
  }

  void testBarrier() { pg_->barrier()->wait(); }

  void testSendRecvRing() {
    // Every rank sends first and receives second: posting at call time keeps this
    // from deadlocking even for messages too big for MPI's eager protocol.
    const int next = (pg_->rank() + 1) % pg_->size(), prev = (pg_->rank() + pg_->size() - 1) % pg_->size();
    Tensor out = Tensor::full({1 << 20}, double(pg_->rank()));
    Tensor in = Tensor::zeros({1 << 20});
    auto s = pg_->send(out, next, 7);
    auto r = pg_->recv(in, prev, 7);
    s->wait();
    r->wait();
    QCOMPARE(in.at<float>({123}), float(prev));
  }

  void testManyOpsInFlightCompleteInOrder() {
    std::vector<Tensor> ts;
    std::vector<std::shared_ptr<Work>> works;
    std::mutex m;
    std::vector<uint64_t> order;
    for (int i = 0; i < 64; ++i) {
      ts.push_back(Tensor::full({1000 + i}, double(i)));
      works.push_back(pg_->allreduce(ts.back()));
      const uint64_t seq = works.back()->sequence_number();
      works.back()->get_future()->add_done_callback([&, seq](Future&) {
        std::lock_guard<std::mutex> lock(m);
        order.push_back(seq);
      });
    }
    for (auto& w : works)
      w->wait();
    QVERIFY(std::is_sorted(order.begin(), order.end()));
    QCOMPARE(order.size(), size_t{64});
    for (int i = 0; i < 64; ++i)
      QCOMPARE(ts[i].at<float>({0}), float(i * pg_->size()));
  }

  void testFutureThen() {
    Tensor t = Tensor::full({4}, 3.0);
    auto halved = pg_->allreduce(t)->get_future()->then([](Future& f) {
      Tensor v = f.value()[0].clone();
      kernels::scale_(v, 0.5);
      return std::vector<Tensor>{v};
    });
    QCOMPARE(halved->wait()[0].at<float>({0}), 1.5f * pg_->size());
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

  void testIdleGroupUsesNoCpu() {
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    QThread::msleep(500);
    getrusage(RUSAGE_SELF, &after);
    auto cpu_ms = [](const rusage& u) {
      return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000.0 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1000.0;
    };
    const double used = cpu_ms(after) - cpu_ms(before);
    QVERIFY2(used < 100, qPrintable(QString("an idle group used %1 ms of CPU in 500 ms").arg(used)));
  }

  void cleanupTestCase() {
    pg_->barrier()->wait();
    pg_.reset();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestProcessGroupMpi)
#include "tst_process_group_mpi.moc"
