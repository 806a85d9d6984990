// ZeroRedundancyOptimizer under mpirun (2, 3 and 4 ranks): the greedy partition, and a
// DDP model trained 100 iterations with ZeRO-wrapped SGD-momentum and Adam ends with the
// same parameters as plain DDP with the same optimizer (1e-5 relative), while each rank
// holds at most 1/world of the optimizer state plus the largest parameter's; uneven
// shards, the state dict gathered and loaded, and join with uneven inputs.
#include <QtTest/QtTest>

#include "autograd/ops.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp/zero_redundancy_optimizer.h"
#include "mpi_test_main.h"
#include "test_helpers.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "optim/optimizer.h"

using namespace ddpscope;
using ddpscope::testing::relative_error;

namespace {

std::shared_ptr<nn::Module> mlp() {
  Generator g(21);
  return std::make_shared<nn::Mlp>(nn::MlpConfig{.in_features = 12, .width = 48, .depth = 3, .out_features = 4}, &g);
}

// Three parameters (Linear with bias, Linear without): with 4 ranks one rank owns none.
std::shared_ptr<nn::Module> three_parameter_model() {
  Generator g(23);
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(12, 8, true, &g), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(8, 4, false, &g)});
}

using Factory = ddp::ZeroRedundancyOptimizer::OptimizerFactory;

Factory factory(const QString& name) {
  if (name == "sgd-momentum")
    return [](std::vector<Tensor> p) {
      return std::make_unique<optim::SGD>(std::move(p), optim::SgdOptions{.lr = 0.05, .momentum = 0.9});
    };
  if (name == "adam")
    return [](std::vector<Tensor> p) {
      return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions{.lr = 1e-3});
    };
  return [](std::vector<Tensor> p) {
    return std::make_unique<optim::AdamW>(std::move(p), optim::AdamOptions{.lr = 1e-3, .weight_decay = 0.01});
  };
}

}  // namespace

class TestZero : public WorldTest {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

  // `steps` iterations in lockstep through two models with their optimizers (a plain one
  // or a ZeroRedundancyOptimizer: both have zero_grad() and step()), on the same global
  // batches of 4 rows per rank drawn from `seed`, each rank training on its rows.
  template <typename OptA, typename OptB>
  void train_both(ddp::DistributedDataParallel& a, OptA& opt_a, ddp::DistributedDataParallel& b, OptB& opt_b, int steps,
                  uint64_t seed) {
    const int n = pg_->size();
    const int64_t rows = 4;
    Generator data(seed);
    for (int step = 0; step < steps; ++step) {
      const Tensor x = randn({n * rows, 12}, DType::F32, &data), y = randn({n * rows, 4}, DType::F32, &data);
      const Tensor xs = x.narrow(0, pg_->rank() * rows, rows).contiguous();
      const Tensor ys = y.narrow(0, pg_->rank() * rows, rows).contiguous();
      opt_a.zero_grad();
      mse_loss(a.forward(xs), ys).backward();
      opt_a.step();
      opt_b.zero_grad();
      mse_loss(b.forward(xs), ys).backward();
      opt_b.step();
    }
  }

 private slots:
  void initTestCase() { join_world(pg_); }

  void testGreedyPartition() {
    // Largest first, each to the least-loaded rank: 100 -> 0, 60 -> 1, 50 -> 1 (60 < 100)...
    QCOMPARE(ddp::partition_parameters({10, 100, 50, 60}, 2), (std::vector<int>{0, 0, 1, 1}));
    // Uneven shards: 3 parameters over 4 ranks leave one rank with none.
    QCOMPARE(ddp::partition_parameters({5, 7, 6}, 4), (std::vector<int>{2, 0, 1}));
    QCOMPARE(ddp::partition_parameters({4, 4, 4, 4}, 3), (std::vector<int>{0, 1, 2, 0}));
  }

  void testSameParametersAsPlainDdp_data() {
    QTest::addColumn<QString>("optimizer");
    QTest::newRow("sgd-momentum") << "sgd-momentum";
    QTest::newRow("adam") << "adam";
    QTest::newRow("adamw") << "adamw";
  }
  void testSameParametersAsPlainDdp() {
    QFETCH(QString, optimizer);
    const int n = pg_->size();
    ddp::DistributedDataParallel plain(mlp(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    ddp::DistributedDataParallel sharded(mlp(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    const auto plain_opt = factory(optimizer)(plain.parameters());
    ddp::ZeroRedundancyOptimizer zero(sharded.parameters(), pg_, factory(optimizer));
    train_both(plain, *plain_opt, sharded, zero, 100, 5);
    const auto a = sharded.parameters(), e = plain.parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      const double err = relative_error(a[i], e[i]);
      QVERIFY2(err <= 1e-5,
               qPrintable(QString("%1 after 100 steps: relative error %2").arg(a[i].name().c_str()).arg(err)));
    }
    // Every rank holds only its shard's state: at most 1/world of the whole plus the
    // largest parameter's share (state per element is the same for every parameter).
    int64_t largest = 0, total_numel = 0;
    for (const Tensor& p : e) {
      largest = std::max<int64_t>(largest, p.numel());
      total_numel += p.numel();
    }
    const int64_t whole = plain_opt->state_bytes();
    const int64_t per_element = whole / total_numel;
    QVERIFY(whole > 0);
    QVERIFY2(zero.state_bytes() <= whole / n + largest * per_element,
             qPrintable(QString("rank %1 holds %2 B of %3 B").arg(pg_->rank()).arg(zero.state_bytes()).arg(whole)));
    QVERIFY2(zero.state_bytes() < whole || n == 1, "a shard as large as the whole");
  }

  // PyTorch's overlap_with_ddp: the shard's update runs in DDP's bucket hook during
  // backward; the parameters after 100 iterations are those of the plain step.
  void testOverlapWithDdpGivesTheSameParameters() {
    ddp::DistributedDataParallel plain(mlp(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    ddp::DistributedDataParallel overlapped(mlp(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    QVERIFY2(overlapped.buckets().size() >= 2, qPrintable(QString("%1 buckets").arg(overlapped.buckets().size())));
    ddp::ZeroRedundancyOptimizer a(plain.parameters(), pg_, factory("adam"));
    ddp::ZeroRedundancyOptimizer o(overlapped.parameters(), pg_, factory("adam"));
    o.overlap_with(overlapped);
    train_both(plain, a, overlapped, o, 100, 8);
    // Every update of this rank's shard happened in the hook (100 per parameter it owns).
    QCOMPARE(o.stepped_in_hook(), int64_t(100 * o.shard(pg_->rank()).size()));
    const auto x = overlapped.parameters(), e = plain.parameters();
    for (size_t i = 0; i < x.size(); ++i) {
      const double err = relative_error(x[i], e[i]);
      QVERIFY2(err <= 1e-6, qPrintable(QString("%1: relative error %2").arg(x[i].name().c_str()).arg(err)));
    }
  }

  // Uneven shards: 3 parameters over the ranks (with 4, one rank owns none and holds no
  // state) still train to plain DDP's parameters.
  void testUnevenShards() {
    const int n = pg_->size();
    ddp::DistributedDataParallel plain(three_parameter_model(), pg_, {});
    ddp::DistributedDataParallel sharded(three_parameter_model(), pg_, {});
    QCOMPARE(int(sharded.parameters().size()), 3);
    const auto plain_opt = factory("adam")(plain.parameters());
    ddp::ZeroRedundancyOptimizer zero(sharded.parameters(), pg_, factory("adam"));
    int owned = 0;
    for (int r = 0; r < n; ++r)
      owned += static_cast<int>(zero.shard(r).size());
    QCOMPARE(owned, 3);
    train_both(plain, *plain_opt, sharded, zero, 30, 6);
    if (zero.shard(pg_->rank()).empty()) QCOMPARE(zero.state_bytes(), int64_t{0});
    const auto a = sharded.parameters(), e = plain.parameters();
    for (size_t i = 0; i < a.size(); ++i)
      QVERIFY2(relative_error(a[i], e[i]) <= 1e-5, a[i].name().c_str());
  }

  // consolidate_state_dict gathers the shards on one rank: the whole state equals a plain
  // optimizer's after the same steps; loading it (every rank, the whole state) into a
  // fresh ZeRO continues as the plain optimizer does.
  void testStateDictConsolidateAndLoad() {
    const int to = pg_->size() - 1;  // not rank 0, to show any rank can hold it
    ddp::DistributedDataParallel plain(mlp(), pg_, {});
    ddp::DistributedDataParallel sharded(mlp(), pg_, {});
    const auto plain_opt = factory("adam")(plain.parameters());
    ddp::ZeroRedundancyOptimizer zero(sharded.parameters(), pg_, factory("adam"));
    train_both(plain, *plain_opt, sharded, zero, 20, 7);
    QVERIFY_THROWS_EXCEPTION(Error, zero.state_dict());  // not consolidated yet
    zero.consolidate_state_dict(to);
    const nn::StateDict expected = plain_opt->state_dict();
    if (pg_->rank() == to) {
      const nn::StateDict whole = zero.state_dict();
      QCOMPARE(whole.size(), expected.size());
      std::map<std::string, Tensor> by_key(whole.begin(), whole.end());
      for (const auto& [key, value] : expected) {
        QVERIFY2(by_key.count(key), key.c_str());
        QVERIFY2(relative_error(by_key.at(key), value) <= 1e-5, key.c_str());
      }
    } else {
      try {
        (void)zero.state_dict();
        QFAIL("state_dict() on a rank that does not hold the consolidated state");
      } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains("consolidate_state_dict"), e.what());
      }
    }
    // A fresh ZeRO over a copy of the model, loaded with the whole state.
    ddp::DistributedDataParallel resumed(mlp(), pg_, {});
    resumed.load_state_dict(plain.state_dict());
    ddp::ZeroRedundancyOptimizer loaded(resumed.parameters(), pg_, factory("adam"));
    loaded.load_state_dict(expected);
    QCOMPARE(loaded.state_bytes(), zero.state_bytes());
    train_both(plain, *plain_opt, resumed, loaded, 10, 17);
    const auto a = resumed.parameters(), e = plain.parameters();
    for (size_t i = 0; i < a.size(); ++i)
      QVERIFY2(relative_error(a[i], e[i]) <= 1e-5, a[i].name().c_str());
    QVERIFY_THROWS_EXCEPTION(Error, loaded.load_state_dict({{"state.99.exp_avg", Tensor::zeros({1})}}));
  }

  // Uneven inputs: rank r has 6 + 3r batches. ZeRO joined to DDP's join context: a rank
  // out of data still steps its shard (with the training ranks' averaged gradients) and
  // broadcasts it, so the job finishes and every rank ends with the parameters plain DDP
  // under join ends with; overlapped with DDP too (the joined rank then steps and sends
  // bucket by bucket, in the training ranks' order).
  void testJoinWithUnevenInputs_data() {
    QTest::addColumn<bool>("overlap");
    QTest::newRow("stepped after backward") << false;
    QTest::newRow("overlapped with DDP") << true;
  }
  void testJoinWithUnevenInputs() {
    QFETCH(bool, overlap);
    const int batches = 6 + 3 * pg_->rank();
    const int64_t b = 4;
    auto run = [&](ddp::DistributedDataParallel& model, auto&& zero_grad, auto&& step, auto&& join_extra) {
      Generator data(40 + pg_->rank());
      auto join = model.join();
      join_extra(*join);
      for (int i = 0; i < batches; ++i) {
        const Tensor x = randn({b, 12}, DType::F32, &data), y = randn({b, 4}, DType::F32, &data);
        zero_grad();
        mse_loss(model.forward(x), y).backward();
        step();
      }
      join->finish();
    };
    ddp::DistributedDataParallel plain(mlp(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    const auto plain_opt = factory("adam")(plain.parameters());
    run(
        plain, [&] { plain_opt->zero_grad(); }, [&] { plain_opt->step(); }, [](auto&) {});
    ddp::DistributedDataParallel sharded(mlp(), pg_, {.bucket_cap_mb = 0.004, .first_bucket_cap_mb = 0.001});
    QVERIFY2(sharded.buckets().size() >= 2, "one bucket would not show the bucket order");
    ddp::ZeroRedundancyOptimizer zero(sharded.parameters(), pg_, factory("adam"));
    if (overlap) zero.overlap_with(sharded);
    run(
        sharded, [&] { zero.zero_grad(); }, [&] { zero.step(); }, [&](auto& join) { zero.join_with(join); });
    // (Plain DDP's join ends with every rank holding the last rank's model.)
    const auto a = sharded.parameters(), e = plain.parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      const double err = relative_error(a[i], e[i]);
      QVERIFY2(err <= 1e-5, qPrintable(QString("%1: relative error %2").arg(a[i].name().c_str()).arg(err)));
    }
  }

  void testBadArgumentsAreRefused() {
    QVERIFY_THROWS_EXCEPTION(Error, ddp::ZeroRedundancyOptimizer({}, pg_, factory("adam")));
    QVERIFY_THROWS_EXCEPTION(Error, ddp::ZeroRedundancyOptimizer(mlp()->parameters(), nullptr, factory("adam")));
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestZero)
#include "tst_zero_redundancy_optimizer.moc"
