// The links between ranks (link_matrix.h) from run files written here: the link test's
// best exchange per pair, traffic from sends, ring steps and RPC messages with their rates
// computed by hand, host pairs, the ring's ceiling, and the slow-link verdict naming a rank,
// a host of two ranks, or single links, and nothing when the links are even or too few.
#include <QtTest/QtTest>

#include <cmath>

#include "link_matrix.h"
#include "link_matrix_text.h"
#include "link_test_runs.h"
#include "network_bound.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

using namespace link_test_runs;

std::string host_per_rank(int r) { return "h" + std::to_string(r); }

const RankLink* find(const LinkReport& report, int src, int dst) {
  for (const RankLink& l : report.links)
    if (l.src == src && l.dst == dst) return &l;
  return nullptr;
}

}  // namespace

class TestLinkMatrix : public ScratchTest {
  Q_OBJECT

 private slots:
  void testASlowRankIsNamed() {
    const std::string file = path("slow_rank.ddprun");
    // 4 hosts at 0.25 GB/s (2 Gbit/s), rank 2's at 0.025 GB/s (200 Mbit/s) both ways.
    write_run(file, 4,
              measured(
                  4, [](int a, int b) { return a == 2 || b == 2 ? 0.025 : 0.25; }, host_per_rank));
    RunStoreReader run(file);
    const LinkReport report = analyze_links(run);
    QVERIFY(report.measured);
    QCOMPARE(report.links.size(), size_t{12});
    const RankLink* slow = find(report, 1, 2);
    QVERIFY(slow);
    QCOMPARE(slow->tests, 2);
    QVERIFY(std::abs(slow->measured_gbps - 0.025) < 1e-6);  // the faster of its two exchanges
    QCOMPARE(slow->measured_bytes, int64_t{100'000'000});
    QVERIFY(std::isnan(slow->achieved_gbps()));  // no traffic
    QCOMPARE(report.host_links.size(), size_t{12});
    QVERIFY(std::abs(report.ring_ceiling_gbps - 0.025) < 1e-6);
    QVERIFY(report.slow.has_value());
    QCOMPARE(report.slow->culprit, SlowLinkVerdict::Culprit::Rank);
    QCOMPARE(report.slow->rank, 2);
    QCOMPARE(report.slow->host, std::string("h2"));
    QCOMPARE(report.slow->links.size(), size_t{6});
    QVERIFY2(report.slow->text.rfind("rank 2's link (host h2) runs at 200 Mbit/s where the others run at 2.00 Gbit/s "
                                     "(measured by --measure-links)",
                                     0) == 0,
             report.slow->text.c_str());
    const std::string text = link_report_text(report);
    QVERIFY2(text.find("Slow link: rank 2's link") == 0, text.c_str());
    QVERIFY2(text.find("Ring ceiling: 200 Mbit/s") != std::string::npos, text.c_str());
    const auto j = link_report_json(report);
    QCOMPARE(j["slow"]["rank"].get<int>(), 2);
    QCOMPARE(j["links"].size(), size_t{12});
  }

  void testAHostOfTwoRanksIsNamed() {
    const std::string file = path("slow_host.ddprun");
    // Ranks 0-5 on three hosts of two; host b's link (ranks 2, 3) is slow; same-host pairs fast.
    const auto host = [](int r) { return std::string(1, static_cast<char>('a' + r / 2)); };
    write_run(file, 6,
              measured(
                  6,
                  [&](int a, int b) {
                    if (host(a) == host(b)) return 2.0;
                    return host(a) == "b" || host(b) == "b" ? 0.025 : 0.25;
                  },
                  host));
    RunStoreReader run(file);
    const LinkReport report = analyze_links(run);
    QVERIFY(report.slow.has_value());
    QCOMPARE(report.slow->culprit, SlowLinkVerdict::Culprit::Host);
    QCOMPARE(report.slow->host, std::string("b"));
    QVERIFY2(report.slow->text.rfind("host b's link (ranks 2, 3) runs at 200 Mbit/s", 0) == 0,
             report.slow->text.c_str());
    QCOMPARE(report.host_links.size(), size_t{6});
  }

  void testOneSlowLinkIsNamedAsALink() {
    const std::string file = path("slow_pair.ddprun");
    write_run(file, 4,
              measured(
                  4, [](int a, int b) { return a == 0 && b == 1 ? 0.05 : 0.25; }, host_per_rank));
    RunStoreReader run(file);
    const LinkReport report = analyze_links(run);
    QVERIFY(report.slow.has_value());
    QCOMPARE(report.slow->culprit, SlowLinkVerdict::Culprit::Links);
    QCOMPARE(report.slow->links, (std::vector<std::pair<int, int>>{{0, 1}}));
    QVERIFY2(report.slow->text.rfind("the link 0->1 runs at 400 Mbit/s", 0) == 0, report.slow->text.c_str());
  }

  void testEvenOrTooFewLinksNameNothing() {
    const std::string even = path("even.ddprun");
    // Within a factor of 1.6 of each other: no link is slow.
    write_run(even, 4,
              measured(
                  4, [](int a, int b) { return 0.2 + 0.03 * (a + b); }, host_per_rank));
    RunStoreReader run(even);
    QVERIFY(!analyze_links(run).slow.has_value());
    const std::string two = path("two.ddprun");
    write_run(two, 2,
              measured(
                  2, [](int a, int) { return a == 0 ? 0.01 : 1.0; }, host_per_rank));
    RunStoreReader run2(two);
    QVERIFY(!analyze_links(run2).slow.has_value());  // one pair: nothing to compare it with
    // One host: shared memory, whose rates a busy core halves; no network link to name.
    const std::string same = path("one_host.ddprun");
    write_run(
        same, 4,
        measured(
            4, [](int a, int b) { return a == 0 && b == 1 ? 0.5 : 5.0; }, [](int) { return std::string("node"); }));
    RunStoreReader run_same(same);
    QVERIFY(!analyze_links(run_same).slow.has_value());
    const std::string one = path("one.ddprun");
    write_run(one, 1, {{0, "h0", {}}});
    RunStoreReader run1(one);
    QCOMPARE(link_report_text(analyze_links(run1)),
             std::string("The run has one rank: there is no link between ranks.\n"));
  }

  void testTrafficAndItsRates() {
    const std::string file = path("traffic.ddprun");
    // Rank 0 sends 1 MiB to rank 1 in 4 ms, and 1 KiB (too small to rate) in 1 ms; a ring
    // step of 2 MiB to rank 1 in 2 ms; a broadcast of 4 MB through the library (no pairs);
    // then an RPC message of 2 MiB, sent at 16.00104 ms and received at 24.00102 ms.
    RankSpans r0{0,
                 "h0",
                 {{Kind::PgOp, 1, 1 << 20, 4'000'000, "send"},
                  {Kind::PgOp, 1, 1024, 1'000'000, "send"},
                  {Kind::RingStep, 1, 2 << 20, 2'000'000, "ring_step"},
                  {Kind::PgOp, -1, 4'000'000, 9'000'000, "broadcast"},
                  {Kind::RpcSend, 1, 2 << 20, 1000, "call"}}};
    RankSpans r1{1,
                 "h1",
                 {{Kind::PgOp, 0, 1 << 20, 4'000'000, "recv"},
                  {Kind::PgOp, -1, -1, 20'000'000, "x"},
                  {Kind::RpcRecv, 0, 2 << 20, 1000, "call"}}};
    write_run(file, 2, {r0, r1});
    RunStoreReader run(file);
    const LinkReport report = analyze_links(run);
    QVERIFY(!report.measured);
    QCOMPARE(report.links.size(), size_t{1});  // recvs are counted at their sender
    const RankLink& l = report.links[0];
    QCOMPARE(l.bytes, int64_t{(1 << 20) + 1024 + (2 << 20) + (2 << 20)});
    QCOMPARE(l.transfers, int64_t{4});
    QCOMPARE(l.rated_bytes, int64_t{5 << 20});
    // 5 MiB over 4 + 2 ms of spans and the message's 7,999,980 ns from send to receipt.
    QVERIFY(std::abs(l.achieved_gbps() - (5.0 * (1 << 20)) / (6e6 + 7'999'980)) < 1e-9);
    QCOMPARE(report.group_collective_bytes, int64_t{4'000'000});
    QVERIFY(std::isnan(report.ring_ceiling_gbps));
    QCOMPARE(report.host_links.size(), size_t{1});
    QVERIFY(!report.slow.has_value());
  }

  void testNetworkBoundNearTheCeilingOnly() {
    const std::string file = path("bound.ddprun");
    write_run(file, 4,
              measured(
                  4, [](int, int) { return 0.25; }, host_per_rank));
    RunStoreReader run(file);
    const LinkReport links = analyze_links(run);
    QVERIFY(!links.slow.has_value());
    BandwidthReport bw;
    for (int r = 0; r < 4; ++r)
      bw.ranks.push_back({r, 10, 1 << 24, 50.0, 0.21, r < 2 ? 0.2 : 0.22});
    const RunAnalysis none;
    const auto bound = find_network_bound(run, links, bw, none);
    QVERIFY(bound.has_value());
    QVERIFY(std::abs(bound->share() - 0.22 / 0.25) < 1e-9);  // the median rank's median collective
    QVERIFY2(bound->text.rfind("The job is network-bound: its collectives run at 1.76 Gbit/s, 88% of the links' "
                               "measured ceiling (2.00 Gbit/s)",
                               0) == 0,
             bound->text.c_str());
    // Well below the ceiling: compute or waiting, not the network.
    for (RankRate& r : bw.ranks)
      r.median_busbw_gbps = 0.1;
    QVERIFY(!find_network_bound(run, links, bw, none).has_value());
    // A slow link is the finding instead.
    LinkReport slow = links;
    slow.slow = SlowLinkVerdict{};
    for (RankRate& r : bw.ranks)
      r.median_busbw_gbps = 0.24;
    QVERIFY(!find_network_bound(run, slow, bw, none).has_value());
    QVERIFY(find_network_bound(run, links, bw, none).has_value());
  }

  void testRateText() {
    QCOMPARE(link_rate_text(0.025), std::string("200 Mbit/s"));
    QCOMPARE(link_rate_text(0.2345), std::string("1.88 Gbit/s"));
    QCOMPARE(link_rate_text(0.0015), std::string("12.0 Mbit/s"));
    QCOMPARE(link_rate_text(std::nan("")), std::string("-"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestLinkMatrix)
#include "tst_link_matrix.moc"
