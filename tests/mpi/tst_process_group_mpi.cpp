// ProcessGroupMPI under mpirun (2 and 4 ranks): every op and reduce op, every dtype,
// sizes from 1 element to 64M, ordering of many ops in flight, futures, and an idle group
// and a rank waiting for a late one that use next to no CPU.
#include <QtTest/QtTest>

#include <functional>
#include <numeric>

#include "reduce_expectations.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::c10d;
using namespace ddpscope::testing::reduce_expectations;

namespace {
double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1000.0 + static_cast<double>(t.tv_nsec) / 1e6;
}

// One round in which the group's last rank starts `op` `late_ms` after the others (after a
// barrier of `group`): how long this rank took in it, and the CPU its process used meanwhile.
struct WaitCost {
  double waited_ms = 0, cpu_ms = 0;
};
WaitCost last_rank_late(ProcessGroup& group, int late_ms, const std::function<void()>& op) {
  group.barrier()->wait();
  const double cpu_before = process_cpu_ms();
  QElapsedTimer wall;
  wall.start();
  if (group.rank() == group.size() - 1) QThread::msleep(static_cast<unsigned long>(late_ms));
  op();
  return {static_cast<double>(wall.elapsed()), process_cpu_ms() - cpu_before};
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

  // A rank that waits for a late one sleeps instead of polling (mpi_wait.h): the last rank
  // arrives 1.2 s late at an allreduce, a barrier and a receive, and the others use under a
  // quarter of that wait in CPU. Before, OpenMPI's poll held a core for the whole wait
  // (sched_yield in a loop: about 1 s of CPU a second). (Groups across hosts, the ring's,
  // keep MPI's own poll: a barrier there costs a network round trip a collective.)
  void testAWaitingRankSleeps_data() {
    QTest::addColumn<QString>("op");
    for (const char* op : {"allreduce", "barrier", "recv"})
      QTest::newRow(op) << QString(op);
  }

  void testAWaitingRankSleeps() {
    QFETCH(QString, op);
    std::shared_ptr<ProcessGroup> group = pg_;
    const int late = pg_->size() - 1;
    constexpr int kLateMs = 1200;
    Tensor t = Tensor::full({1 << 16}, 1.0);
    const auto [waited, used] = last_rank_late(*pg_, kLateMs, [&] {
      if (op == "barrier") {
        group->barrier()->wait();
      } else if (op == "recv") {
        // Each rank receives from the late one in turn, which sends to all of them.
        if (pg_->rank() == late) {
          for (int r = 0; r < late; ++r)
            pg_->send(t, r, 11)->wait();
        } else {
          pg_->recv(t, late, 11)->wait();
        }
      } else {
        group->allreduce(t)->wait();
      }
    });
    if (op == "allreduce") QCOMPARE(t.at<float>({0}), float(pg_->size()));
    if (pg_->rank() != late) {
      QVERIFY2(waited >= kLateMs * 0.9, qPrintable(QString("rank %1 waited only %2 ms").arg(pg_->rank()).arg(waited)));
      QVERIFY2(used < waited / 4, qPrintable(QString("rank %1 used %2 ms of CPU waiting %3 ms in %4 for a late rank")
                                                 .arg(pg_->rank())
                                                 .arg(used)
                                                 .arg(waited)
                                                 .arg(op)));
    }
    pg_->barrier()->wait();
  }

  // Ranks on one host meet before each collective on a shared futex board
  // (host_arrival_board.h): whichever rank comes last, in rounds where the others arrive
  // microseconds apart (met in the spin) or a few milliseconds apart (met asleep), every
  // rank leaves a round only after the last one arrived (clock: CLOCK_MONOTONIC, one host),
  // and the sums are right; a subgroup of every other rank has a board of its own.
  void testRanksMeetOnTheArrivalBoard() {
    auto mpi = std::dynamic_pointer_cast<ProcessGroupMPI>(pg_);
    QVERIFY(mpi && mpi->uses_arrival_board());
    constexpr int kRounds = 60;
    std::vector<double> arrived(kRounds), left(kRounds);
    auto now_us = [] {
      return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
    pg_->barrier()->wait();
    for (int k = 0; k < kRounds; ++k) {
      const int late = k % pg_->size();
      if (pg_->rank() == late && k % 3 != 0) QThread::usleep(static_cast<unsigned long>(500 + 100 * k));
      Tensor t = Tensor::full({64}, 1.0);
      arrived[static_cast<size_t>(k)] = now_us();
      pg_->allreduce(t)->wait();
      left[static_cast<size_t>(k)] = now_us();
      QCOMPARE(t.at<float>({0}), float(pg_->size()));
    }
    std::vector<double> all_arrived(arrived.size() * static_cast<size_t>(pg_->size()));
    MPI_Allgather(arrived.data(), kRounds, MPI_DOUBLE, all_arrived.data(), kRounds, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int k = 0; k < kRounds; ++k) {
      double last = 0;
      for (int r = 0; r < pg_->size(); ++r)
        last = std::max(last, all_arrived[static_cast<size_t>(r * kRounds + k)]);
      QVERIFY2(left[static_cast<size_t>(k)] >= last,
               qPrintable(QString("round %1: rank %2 left %3 us before the last arrival")
                              .arg(k)
                              .arg(pg_->rank())
                              .arg(last - left[static_cast<size_t>(k)])));
    }
    if (pg_->size() >= 4) {
      std::vector<int> evens;
      for (int r = 0; r < pg_->size(); r += 2)
        evens.push_back(r);
      auto sub = pg_->new_group(evens);
      if (pg_->rank() % 2 == 0) {
        auto sub_mpi = std::dynamic_pointer_cast<ProcessGroupMPI>(sub);
        QVERIFY(sub_mpi && sub_mpi->uses_arrival_board());
        Tensor t = Tensor::full({8}, 1.0);
        sub->allreduce(t)->wait();
        QCOMPARE(t.at<float>({0}), float(evens.size()));
      }
    }
    pg_->barrier()->wait();
  }

  // DDPSCOPE_ARRIVAL_BOARD=0 on one rank: no rank of the new group has a board (creating one
  // is collective), and the group meets a late rank in the polled barrier instead: sums
  // right, the others' wait asleep (under a quarter of it in CPU).
  void testWithoutTheBoardTheGroupMeetsInThePolledBarrier() {
    std::vector<int> everyone(static_cast<size_t>(pg_->size()));
    std::iota(everyone.begin(), everyone.end(), 0);
    if (pg_->rank() == 0) qputenv("DDPSCOPE_ARRIVAL_BOARD", "0");
    auto group = std::dynamic_pointer_cast<ProcessGroupMPI>(pg_->new_group(everyone));
    qunsetenv("DDPSCOPE_ARRIVAL_BOARD");
    QVERIFY(group && !group->uses_arrival_board());
    const int late = pg_->size() - 1;
    constexpr int kLateMs = 800;
    Tensor t = Tensor::full({1 << 12}, 1.0);
    const auto [waited, used] = last_rank_late(*group, kLateMs, [&] { group->allreduce(t)->wait(); });
    QCOMPARE(t.at<float>({0}), float(pg_->size()));
    if (pg_->rank() != late)
      QVERIFY2(used < waited / 4, qPrintable(QString("rank %1 used %2 ms of CPU waiting %3 ms without the board")
                                                 .arg(pg_->rank())
                                                 .arg(used)
                                                 .arg(waited)));
    group->barrier()->wait();
  }

  void cleanupTestCase() {
    pg_->barrier()->wait();
    pg_.reset();
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestProcessGroupMpi)
#include "tst_process_group_mpi.moc"
