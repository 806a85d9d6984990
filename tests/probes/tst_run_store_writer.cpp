// Writing run files: every record type reads back as written, settings records merge
// into the run's config, and a finished run without an iteration count is done.
#include <QtTest/QtTest>

#include "known_runs.h"
#include "scratch_test.h"
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

class TestRunStoreWriter : public ScratchTest {
  Q_OBJECT

 private slots:

  void testEveryRecordReadsBack() {
    const std::string file = path("records.ddprun");
    RunStoreWriter w(file);
    w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
    w.write(known_iteration(0));
    w.end_run("failed", "rank 1 died", 1);
    RunStoreReader r(file);
    const RunRow run = r.run();
    QCOMPARE(run.status, std::string("failed"));
    QCOMPARE(run.failed_rank, 1);
    QCOMPARE(run.message, std::string("rank 1 died"));
    QCOMPARE(run.world_size, 2);
    QCOMPARE(run.model, std::string("mlp"));
    const auto buckets = r.buckets(0);
    QCOMPARE(buckets.size(), size_t(1));
    QCOMPARE(buckets[0].bytes, int64_t(4096));
    QCOMPARE(buckets[0].params, (std::vector<int64_t>{1, 0}));
    const auto params = r.params(0, 0);
    QCOMPARE(params.size(), size_t(2));
    QCOMPARE(params[0].name, std::string("w"));
    QCOMPARE(params[0].numel, int64_t(1024));
    QCOMPARE(params[1].offset, int64_t(1024));
    const GraphRows g = r.graph(0);
    QCOMPARE(g.iteration, int64_t(1));
    QCOMPARE(g.nodes.size(), size_t(2));
    QCOMPARE(g.nodes[1].op, std::string("AccumulateGrad(w)"));
    QCOMPARE(g.nodes[1].deps, int64_t(1));
    QCOMPARE(g.edges.size(), size_t(1));
    const auto loss = r.metrics("loss");
    QCOMPARE(loss.size(), size_t(1));
    QCOMPARE(loss[0].value, 0.5);
    QCOMPARE(r.threads().size(), size_t(2));
    QCOMPARE(r.integrity_check(), std::string("ok"));
  }

  // A "settings" record (a PyTorch job's DDP options) merges into the run's config; one
  // whose values are not an object is skipped, the config left as it was. Its backend
  // (gloo) replaces the "torch" the launcher knew.
  void testSettingsRecordsMergeIntoTheConfig() {
    const std::string file = path("settings.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"source":"torch-script","np":2})", 1, "torch", "script"});
      EventBatch b = known_iteration(0);
      b.records = {R"j({"type":"settings","backend":"gloo","values":{"bucket_cap_mb":0.25,"np":4}})j",
                   R"j({"type":"settings","values":[1,2]})j",
                   R"j({"type":"settings","values":{"static_graph":true}})j"};
      w.write(b);
    }
    RunStoreReader run(file);
    const auto config = nlohmann::json::parse(run.run().config_json);
    QCOMPARE(config.value("source", ""), std::string("torch-script"));
    QCOMPARE(config.value("bucket_cap_mb", 0.0), 0.25);
    QCOMPARE(config.value("np", 0), 4);
    QCOMPARE(config.value("static_graph", false), true);
    QCOMPARE(config.size(), size_t{4});
    QCOMPARE(run.run().backend, std::string("gloo"));
  }

  // A script's run (a PyTorch job) records no iteration count: finished, its ranks are done,
  // not "between iterations"; still running, they are between iterations.
  void testFinishedRunWithoutAnIterationCountIsDone() {
    for (const bool finished : {true, false}) {
      const std::string file = path(finished ? "script-done.ddprun" : "script-running.ddprun");
      {
        RunStoreWriter w(file);
        w.begin_run({R"({"source":"torch-script"})", 1, "gloo", "script"});
        w.write(known_iteration(0));
        if (finished) w.end_run("finished", "");
      }
      RunStoreReader run(file);
      const HangReport report = analyze_hang(run);
      QCOMPARE(report.ranks.size(), size_t{1});
      QCOMPARE(QString::fromUtf8(hang_phase_words(report.ranks[0].phase)),
               finished ? QString("done") : QString("between iterations"));
      QCOMPARE(report.ranks[0].current_iteration, finished ? int64_t{1} : int64_t{2});
    }
  }

  // A collector started without knowing the world (`ddpscope-cli collect`) learns it from
  // the ranks' launcher: it only grows, and a claim past any job is ignored.
  void testTheWorldGrowsAsTheRanksSay() {
    const std::string file = path("world.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"job":"collect"})", 1, "torch", "torch script"});
      EventBatch b = known_iteration(0);
      b.records = {R"j({"type":"settings","world_size":8,"values":{"launcher":"slurm"}})j",
                   R"j({"type":"settings","world_size":4,"values":{}})j",
                   R"j({"type":"settings","world_size":100000000000,"values":{}})j"};
      w.write(b);
    }
    RunStoreReader run(file);
    QCOMPARE(run.run().world_size, 8);
    QCOMPARE(nlohmann::json::parse(run.run().config_json).value("launcher", ""), std::string("slurm"));
  }

  // torchrun restarts every rank after a failure: the second attempt's iterations
  // continue the run's count, each attempt is a row with its place, times and outcome.
  // "stacks" records come from any holder of the job's token: what they claim is bounded
  // (64 threads, 128 frames, 1 KiB a text cut on a UTF-8 boundary, 256 captures a rank), a
  // record whose threads are not a list is skipped, and the frames read back innermost first.
  void testHostileStackRecordsAreBounded() {
    const std::string file = path("stacks.ddprun");
    const auto stacks = [](nlohmann::json threads) {
      return nlohmann::json{{"type", "stacks"}, {"t_ns", 50},     {"reason", "no progress"},
                            {"stalled_ns", 3},  {"iteration", 4}, {"threads", std::move(threads)}}
          .dump();
    };
    nlohmann::json frames = nlohmann::json::array();
    for (int d = 0; d < 500; ++d)
      frames.push_back({{"file", "train.py"}, {"line", d + 1}, {"function", "f"}, {"code", "x"}});
    std::string name(1023, 'a');
    name += "\u00fc";  // two bytes across the 1 KiB cut
    nlohmann::json threads = nlohmann::json::array();
    threads.push_back({{"thread", 7}, {"name", name}, {"frames", frames}, {"omitted", 10}});
    for (int t = 0; t < 199; ++t)
      threads.push_back({{"thread", t}, {"name", "w"}, {"frames", nlohmann::json::array()}});
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"job":"torch"})", 1, "torch", "torch script"});
      EventBatch b = known_iteration(0, 5);
      b.records.push_back(stacks(threads));
      b.records.push_back(stacks("not a list"));
      for (int i = 0; i < 300; ++i)
        b.records.push_back(stacks(nlohmann::json::array()));
      w.write(b);
    }
    RunStoreReader run(file);
    const auto captures = run.stacks();
    QCOMPARE(captures.size(), size_t{256});
    const StackCapture& c = captures.front();
    QCOMPARE(c.threads.size(), size_t{64});
    QCOMPARE(c.threads[0].frames.size(), size_t{128});
    QCOMPARE(c.threads[0].frames[0].line, int64_t{1});
    QCOMPARE(c.threads[0].omitted, int64_t{10 + 500 - 128});
    QCOMPARE(c.threads[0].name, std::string(1023, 'a'));
    QCOMPARE(c.t_ns, int64_t{55});  // on the run's clock
    QCOMPARE(c.iteration, int64_t{4});
  }

  void testARestartIsASecondAttemptWhoseIterationsFollowTheFirst() {
    const std::string file = path("attempts.ddprun");
    const auto placement = [](int rank, int restart, const char* host) {
      return nlohmann::json{{"type", "placement"}, {"launcher", "torchrun"}, {"local_rank", rank},
                            {"node", 0},           {"restart", restart},     {"max_restarts", 1},
                            {"host", host},        {"pid", 100 + restart},   {"t_ns", 10}}
          .dump();
    };
    const auto end = [](int restart, bool failed) {
      return nlohmann::json{{"type", "rank_end"}, {"restart", restart}, {"failed", failed}, {"t_ns", 2000}}.dump();
    };
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"job":"collect"})", 2, "torch", "torch script"});
      for (int rank = 0; rank < 2; ++rank) {  // attempt 0: one iteration, then rank 1 fails
        EventBatch b = known_iteration(rank, 5);
        b.records.insert(b.records.begin(), placement(rank, 0, "node-a"));  // placement goes first anyway
        b.records.insert(b.records.begin(), end(0, rank == 1));
        w.write(b);
      }
      EventBatch late = known_iteration(1, 5);  // attempt 1 of rank 1, before rank 0's
      late.records.push_back(placement(1, 1, "node-b"));
      w.write(late);
      EventBatch second = known_iteration(0, 5);
      second.records.push_back(placement(0, 1, "node-a"));
      w.write(second);
    }
    RunStoreReader run(file);
    const auto attempts = run.attempts();
    QCOMPARE(attempts.size(), size_t{4});
    QCOMPARE(attempts[0].rank, 0);
    QCOMPARE(attempts[0].attempt, 0);
    QCOMPARE(attempts[0].outcome, std::string("ended"));
    QCOMPARE(attempts[0].first_iteration, int64_t{1});
    QCOMPARE(attempts[0].joined_ns, int64_t{15});  // the rank's clock moved onto the run's
    QCOMPARE(attempts[0].ended_ns, int64_t{2005});
    QCOMPARE(attempts[1].attempt, 1);
    QCOMPARE(attempts[1].outcome, std::string());  // still running
    QCOMPARE(attempts[1].first_iteration, int64_t{2});
    QCOMPARE(attempts[2].rank, 1);
    QCOMPARE(attempts[2].outcome, std::string("failed"));
    QCOMPARE(attempts[3].host, std::string("node-b"));
    QCOMPARE(attempts[3].pid, int64_t{101});
    QCOMPARE(attempts[3].launcher, std::string("torchrun"));
    QCOMPARE(attempts[3].first_iteration, int64_t{2});
    std::map<int, std::set<int64_t>> iterations;
    for (const auto& s : run.spans())
      if (s.kind == Kind::Iteration) iterations[s.rank].insert(s.iteration);
    QCOMPARE(iterations[0], (std::set<int64_t>{1, 2}));
    QCOMPARE(iterations[1], (std::set<int64_t>{1, 2}));
    QCOMPARE(run.ranks()[1].local_rank, 1);
    QCOMPARE(run.ranks()[1].node, 0);
    int64_t loss_iterations = 0;
    for (const auto& m : run.metrics("loss"))
      loss_iterations += m.iteration;
    QCOMPARE(loss_iterations, int64_t{1 + 1 + 2 + 2});
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunStoreWriter)
#include "tst_run_store_writer.moc"
