// `train --measure-links`' schedule and exchange (engine/apps/link_test.h): the pairs (the
// ring, then one per pair of hosts), rounds in which no rank is twice, and the exchange
// itself between every rank of a real mpirun job, which must end on every rank with the
// group still usable.
#include <QtTest/QtTest>

#include <set>

#include "apps/link_test.h"
#include "c10d/process_group.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using apps::LinkPair;

class TestLinkTest : public QObject {
  Q_OBJECT
  std::shared_ptr<c10d::ProcessGroup> pg_;

 private slots:
  void initTestCase() { pg_ = c10d::init_process_group({.backend = "mpi"}); }

  void testPairsOnOneHostAreTheRing() {
    QCOMPARE(apps::link_test_pairs({7, 7}), (std::vector<LinkPair>{{0, 1}}));
    QCOMPARE(apps::link_test_pairs({7, 7, 7, 7}), (std::vector<LinkPair>{{0, 1}, {1, 2}, {2, 3}, {0, 3}}));
  }

  void testEveryPairOfHostsIsAdded() {
    // Ranks 0,1 on host 5, 2,3 on host 6, 4,5 on host 9: the ring, then the hosts' lowest
    // ranks pairwise (0-2, 0-4, 2-4).
    const auto pairs = apps::link_test_pairs({5, 5, 6, 6, 9, 9});
    QCOMPARE(pairs, (std::vector<LinkPair>{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {0, 5}, {0, 2}, {0, 4}, {2, 4}}));
    // 4 hosts of one rank each: the ring and both diagonals, each pair once.
    QCOMPARE(apps::link_test_pairs({1, 2, 3, 4}).size(), size_t{6});
  }

  void testRoundsNeverHoldARankTwice() {
    const auto pairs = apps::link_test_pairs({5, 5, 6, 6, 9, 9});
    const auto rounds = apps::link_test_rounds(pairs);
    size_t total = 0;
    for (const auto& round : rounds) {
      std::set<int> ranks;
      for (const LinkPair& p : round) {
        QVERIFY(ranks.insert(p.a).second);
        QVERIFY(ranks.insert(p.b).second);
      }
      total += round.size();
    }
    QCOMPARE(total, pairs.size());
    QCOMPARE(apps::link_test_rounds(apps::link_test_pairs({7, 7, 7, 7})).size(), size_t{2});  // 0-1 2-3, 1-2 0-3
  }

  void testTheExchangeEndsOnEveryRank() {
    apps::measure_links(*pg_);
    // The group still works and every rank got here.
    Tensor t = Tensor::ones({4});
    pg_->allreduce(t)->wait();
    QCOMPARE(t.data<float>()[0], static_cast<float>(pg_->size()));
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestLinkTest)
#include "tst_link_test.moc"
