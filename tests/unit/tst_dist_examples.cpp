// The distributed autograd examples as real mpirun jobs: seed 000's gradients equal the
// local ones and its graphs join across workers by message id, the parameter server
// learns, and the unused RPC fails in FAST mode and completes in SMART mode.
#include <QtTest/QtTest>

#include <algorithm>

#include "launcher_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::launcher_fixture;

class TestDistExamples : public LauncherTest {
  Q_OBJECT

 private slots:

  void testSeedExampleJsonMatchesLocalGradients() {
    Result r = run({"example", "seed", "--np", "2", "--seed", "7", "--json", "--repeat", "5"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QJsonObject w0;
    int workers = 0;
    for (const auto& line : json_lines(r.out)) {
      ++workers;
      if (line["worker"].toInt() == 0) w0 = line;
    }
    QCOMPARE(workers, 2);
    const auto t1 = flat(w0["inputs"].toObject()["t1"]), t2 = flat(w0["inputs"].toObject()["t2"]),
               t4 = flat(w0["inputs"].toObject()["t4"]);
    const auto g1 = flat(w0["gradients"].toObject()["t1"]), g2 = flat(w0["gradients"].toObject()["t2"]),
               g4 = flat(w0["gradients"].toObject()["t4"]);
    QCOMPARE(t1.size(), size_t{9});
    QCOMPARE(g4.size(), size_t{9});
    for (size_t i = 0; i < 9; ++i) {  // loss = sum((t1 + t2) * t4)
      QCOMPARE(g1[i], t4[i]);
      QCOMPARE(g2[i], t4[i]);
      QVERIFY(std::abs(g4[i] - (t1[i] + t2[i])) < 1e-5);
    }
    QVERIFY(w0["median_us"].toDouble() > 0);
  }

  // With --out, each worker's graph of the pass is in the run file, and its send and recv
  // nodes join across workers by autograd message id: what the distributed-graph view draws.
  void testSeedExampleRecordsJoinableGraphs() {
    QTemporaryDir dir;
    const QString out = dir.filePath("seed.ddprun");
    Result r = run({"example", "seed", "--np", "2", "--out", out});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    ddpscope::probes::RunStoreReader file(out.toStdString());
    const auto index = file.graph_index();
    QCOMPARE(index.size(), size_t{2});  // one pass, seen by both workers
    QVERIFY(index[0].ctx_id >= 0 && index[0].ctx_id == index[1].ctx_id);
    QCOMPARE(index[0].iteration, index[1].iteration);     // the same pass id
    std::map<std::pair<int, int64_t>, std::string> ends;  // (rank, msg id) -> kind
    int sends = 0;
    for (int rank = 0; rank < 2; ++rank) {
      const auto g = file.graph(rank, index[0].ctx_id, index[0].iteration);
      QVERIFY(!g.nodes.empty());
      for (const auto& n : g.nodes) {
        if (n.kind != "send" && n.kind != "recv") continue;
        QVERIFY(n.msg_id >= 0 && n.peer == 1 - rank);
        ends[{rank, n.msg_id}] = n.kind;
        sends += n.kind == "send";
      }
    }
    QCOMPARE(sends, 2);  // t1, t2 to worker1; t3 back
    for (const auto& [key, kind] : ends) {
      const auto other = ends.find({1 - key.first, key.second});
      QVERIFY2(other != ends.end() && other->second != kind,
               qPrintable(QString("no other end for message %1 on rank %2").arg(key.second).arg(key.first)));
    }
    // Contexts created and released on both workers.
    ddpscope::probes::SpanQuery q;
    q.kinds = {ddpscope::probes::Kind::DistContext};
    int created = 0, released = 0;
    for (const auto& s : file.spans(q)) {
      created += s.name == "context.create";
      released += s.name == "context.release";
    }
    QCOMPARE(created, 2);
    QCOMPARE(released, 2);
    // The pass replays from the file: every node's dependency count falls to 0 one
    // gradient at a time, and every node that ran names the context.
    ddpscope::probes::SpanQuery deps_query;
    deps_query.kinds = {ddpscope::probes::Kind::Dependency};
    const auto decrements = file.spans(deps_query);
    ddpscope::probes::SpanQuery nodes_query;
    nodes_query.kinds = {ddpscope::probes::Kind::AutogradNode};
    const auto node_spans = file.spans(nodes_query);
    QVERIFY(!node_spans.empty());
    for (const auto& s : node_spans)
      QCOMPARE(s.ctx_id, index[0].ctx_id);
    for (int rank = 0; rank < 2; ++rank) {
      for (const auto& n : file.graph(rank, index[0].ctx_id, index[0].iteration).nodes) {
        std::vector<int64_t> left;  // the counts after each decrement, in time order
        for (const auto& d : decrements) {
          if (d.rank == rank && d.seq == n.sequence_nr && d.ctx_id == index[0].ctx_id) left.push_back(d.param);
        }
        QCOMPARE(static_cast<int64_t>(left.size()), n.deps);
        for (size_t i = 0; i < left.size(); ++i)
          QCOMPARE(left[i], n.deps - 1 - static_cast<int64_t>(i));
      }
    }
    // The debug counters at the end of each share of the pass (worker 0 has two: the
    // roots, then the gradients worker 1 sent back).
    for (int rank = 0; rank < 2; ++rank) {
      const auto alive = file.metrics("dist.contexts", rank);
      const auto passes = file.metrics("dist.backward_passes", rank);
      QCOMPARE(alive.size(), rank == 0 ? size_t{2} : size_t{1});
      QCOMPARE(passes.size(), alive.size());
      QCOMPARE(file.metrics("dist.gradient_messages", rank).size(), alive.size());
      for (size_t i = 0; i < alive.size(); ++i)
        QVERIFY(alive[i].value >= 1 && passes[i].value >= 1);
    }
  }

  // parameter-server: two trainers fit their data to worker 0's W through one
  // DistributedOptimizer each; W is fitted (each trainer ends at a tenth of the untrained
  // W's loss or less) and neither trainer's loss rises. When the machine is busy one trainer
  // may start after the other has fitted W, so its own first loss may already be low.
  void testParameterServerExampleLearns() {
    Result r = run({"example", "parameter-server", "--np", "3", "--json"});
    QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
    std::vector<std::pair<double, double>> first_last;
    for (const auto& line : json_lines(r.out)) {
      if (line["worker"].toInt() == 0) {
        QCOMPARE(flat(line["inputs"].toObject()["W"]).size(), size_t{8});
        QVERIFY(line["gradients"].toObject().contains("W"));  // trainer 1's first step
        continue;
      }
      const QJsonArray losses = line["losses"].toArray();
      QCOMPARE(losses.size(), 20);
      first_last.emplace_back(losses.first().toDouble(), losses.last().toDouble());
    }
    QCOMPARE(first_last.size(), size_t{2});
    const double untrained = std::max(first_last[0].first, first_last[1].first);
    for (const auto& [first, last] : first_last) {
      QVERIFY2(last < untrained / 10, qPrintable(r.out));
      QVERIFY2(last <= first * (1 + 1e-6), qPrintable(r.out));
    }
  }

  void testUnusedRpcExampleFastFailsSmartCompletes() {
    Result fast = run({"example", "unused-rpc", "--np", "2"});
    QVERIFY2(fast.code != 0, qPrintable(fast.out + fast.err));
    QVERIFY2(fast.err.contains("rank 0: distributed backward of context") &&
                 fast.err.contains("never received gradients") && fast.err.contains("SendRpcBackward on worker1"),
             qPrintable(fast.err));
    QTemporaryDir dir;
    const QString out = dir.filePath("smart.ddprun");
    Result smart = run({"example", "unused-rpc", "--np", "2", "--mode", "smart", "--json", "--out", out});
    QVERIFY2(smart.code == 0, qPrintable(smart.out + smart.err));
    // SMART's exchange in the run file: each worker asks the other to activate the send
    // functions its search reached, and exactly those become active. Worker 1's send of
    // the unused result (e) is never asked for.
    {
      ddpscope::probes::RunStoreReader file(out.toStdString());
      ddpscope::probes::SpanQuery q;
      q.kinds = {ddpscope::probes::Kind::DistFunction};
      std::set<std::pair<int, int64_t>> asked, active;  // (owner of the send, msg id)
      int sends_on_1 = 0;
      for (const auto& s : file.spans(q)) {
        if (s.name == "smart.ask") asked.insert({static_cast<int>(s.peer), s.msg_id});
        if (s.name == "smart.active") active.insert({s.rank, s.msg_id});
        if (s.name == "send" && s.rank == 1) ++sends_on_1;
      }
      QVERIFY(!asked.empty());
      QCOMPARE(active, asked);
      QCOMPARE(sends_on_1, 2);  // d and e back to worker 0
      QCOMPARE(std::count_if(active.begin(), active.end(), [](const auto& a) { return a.first == 1; }), 1);
    }
    for (const auto& line : json_lines(smart.out)) {
      if (line["worker"].toInt() != 0) continue;
      const auto g = line["gradients"].toObject();
      QVERIFY(g.contains("a") && g.contains("b") && !g.contains("c"));
      for (float x : flat(g["a"]))
        QCOMPARE(x, 1.0f);
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestDistExamples)
#include "tst_dist_examples.moc"
