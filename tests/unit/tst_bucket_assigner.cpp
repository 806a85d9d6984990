// DDP bucket assignment: reverse registration order, caps (first bucket smaller), one
// bucket may pass the cap by one parameter, separate buckets per dtype, custom order.
#include <QtTest/QtTest>

#include "ddp/bucket_assigner.h"
#include "nn/models.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::ddp;

namespace {
std::vector<Tensor> params_of_bytes(const std::vector<int64_t>& kib, DType dtype = DType::F32) {
  std::vector<Tensor> out;
  for (int64_t k : kib)
    out.push_back(Tensor::zeros({k * 1024 / static_cast<int64_t>(element_size(dtype))}, dtype));
  return out;
}
std::vector<std::vector<size_t>> indices(const std::vector<BucketSpec>& buckets) {
  std::vector<std::vector<size_t>> out;
  for (auto& b : buckets)
    out.push_back(b.params);
  return out;
}
}  // namespace

class TestBucketAssigner : public QObject {
  Q_OBJECT
 private slots:
  void testReverseOrderAndCaps() {
    // 6 parameters of 400 KiB; first cap 1 MiB, then 2 MiB.
    auto params = params_of_bytes({400, 400, 400, 400, 400, 400});
    auto buckets = assign_buckets(params, {.first_bytes = 1 << 20, .bytes = 2 << 20});
    // 5,4,3 reach 1200 KiB >= 1 MiB: first bucket; 2,1,0 = 1200 KiB < 2 MiB: the rest.
    QCOMPARE(indices(buckets), (std::vector<std::vector<size_t>>{{5, 4, 3}, {2, 1, 0}}));
    QCOMPARE(buckets[0].bytes, size_t{1200 * 1024});
  }

  void testBucketClosesOnTheParameterThatCrossesTheCap() {
    auto params = params_of_bytes({100, 5000, 100});
    auto buckets = assign_buckets(params, {.first_bytes = 1 << 20, .bytes = 1 << 20});
    QCOMPARE(indices(buckets), (std::vector<std::vector<size_t>>{{2, 1}, {0}}));
  }

  void testDtypesNeverShareABucket() {
    std::vector<Tensor> params = params_of_bytes({10, 10});
    params.push_back(Tensor::zeros({10}, DType::F16));
    params.push_back(Tensor::zeros({10}, DType::F32));
    auto buckets = assign_buckets(params, {});
    QCOMPARE(buckets.size(), size_t{2});
    for (auto& b : buckets) {
      for (size_t i : b.params)
        QCOMPARE(params[i].dtype(), b.dtype);
    }
    QCOMPARE(buckets[0].params.front(), size_t{3});  // ordered by first ready parameter
  }

  void testCustomReadyOrder() {
    auto params = params_of_bytes({600, 600, 600, 600});
    auto buckets = assign_buckets(params, {.first_bytes = 1 << 20, .bytes = 1 << 20}, {1, 3, 0, 2});
    QCOMPARE(indices(buckets), (std::vector<std::vector<size_t>>{{1, 3}, {0, 2}}));
    QVERIFY_THROWS_EXCEPTION(Error, assign_buckets(params, {}, {0, 0, 1, 2}));
    QVERIFY_THROWS_EXCEPTION(Error, assign_buckets(params, {}, {0, 1}));
  }

  void testMlpCoversEveryParameterOnce() {
    nn::Mlp mlp({.in_features = 64, .width = 256, .depth = 4, .out_features = 8});
    const auto params = mlp.parameters();
    auto buckets = assign_buckets(params, {.first_bytes = 64 << 10, .bytes = 256 << 10});
    std::vector<int> count(params.size(), 0);
    size_t total = 0;
    for (auto& b : buckets) {
      for (size_t i : b.params)
        ++count[i];
      total += b.bytes;
    }
    QVERIFY(std::all_of(count.begin(), count.end(), [](int c) { return c == 1; }));
    size_t expected = 0;
    for (auto& p : params)
      expected += p.nbytes();
    QCOMPARE(total, expected);
    QCOMPARE(buckets.front().params.front(), params.size() - 1);  // the last bias leads
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestBucketAssigner)
#include "tst_bucket_assigner.moc"
