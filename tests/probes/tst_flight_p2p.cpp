// Point-to-point ops in flight dumps: each direction's sends paired with its receives in
// order; all paired and completed is no finding; a send whose receive was never posted is
// found with its two ends named, the receiver as the likely culprit.
#include <QtTest/QtTest>

#include "flight_p2p.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

CollectiveRow p2p(int rank, const std::string& op, int src, int dst, int64_t seq, const std::string& state) {
  CollectiveRow r;
  r.rank = rank;
  r.pg_name = "0";
  r.pg_desc = "default_pg";
  r.record_id = seq;
  r.p2p_seq = seq;
  r.op = op;
  r.profiling_name = "nccl:" + op + " " + std::to_string(src) + "->" + std::to_string(dst);
  r.p2p_src = src;
  r.p2p_dst = dst;
  r.input_sizes = {{1024}};
  r.input_dtypes = {"Float"};
  r.output_sizes = r.input_sizes;
  r.output_dtypes = r.input_dtypes;
  r.state = state;
  r.t_created_ns = 1000 * seq;
  return r;
}

FlightData twoRanks(std::vector<CollectiveRow> rank0, std::vector<CollectiveRow> rank1) {
  FlightData d;
  d.world_size = 2;
  d.by_rank[0] = std::move(rank0);
  d.by_rank[1] = std::move(rank1);
  return d;
}

}  // namespace

class TestFlightP2p : public QObject {
  Q_OBJECT

 private slots:
  void testPairedAndCompletedIsNoFinding() {
    const FlightData d = twoRanks({p2p(0, "send", 0, 1, 1, "completed"), p2p(0, "send", 0, 1, 2, "completed")},
                                  {p2p(1, "recv", 0, 1, 1, "completed"), p2p(1, "recv", 0, 1, 2, "completed")});
    const GroupFinding f = judge_p2p("0", d);
    QCOMPARE(static_cast<int>(f.cls), static_cast<int>(MatchClass::FullyMatched));
    QVERIFY(!f.pending);
  }

  void testASendWithoutItsReceiveIsFound() {
    const FlightData d = twoRanks({p2p(0, "send", 0, 1, 1, "completed"), p2p(0, "send", 0, 1, 2, "started")},
                                  {p2p(1, "recv", 0, 1, 1, "completed")});
    const GroupFinding f = judge_p2p("0", d);
    QVERIFY2(f.cls != MatchClass::FullyMatched, f.verdict.c_str());
    QVERIFY(f.p2p);
    QCOMPARE(f.p2p_src, 0);
    QCOMPARE(f.p2p_dst, 1);
    QCOMPARE(f.seq, int64_t{2});
    QCOMPARE(f.culprits, std::vector<int>{1});
    QVERIFY2(!f.verdict.empty(), "a finding is said in words");
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightP2p)
#include "tst_flight_p2p.moc"
