// The Collect dialog's rank list from a collected run: every rank of the world, those
// that never came as such, each with its host, place, latest attempt and state.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <nlohmann/json.hpp>

#include "job_ranks.h"
#include "run_store_writer.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;

namespace {

probes::EventBatch placed(int rank, int restart, const char* host, int64_t t_ns, const char* outcome) {
  probes::EventBatch b;
  b.rank = rank;
  b.records = {nlohmann::json{
      {"type", "placement"},
      {"launcher", "torchrun"},
      {"local_rank", rank % 2},
      {"node", rank / 2},
      {"restart", restart},
      {"host", host},
      {"t_ns",
       t_ns}}.dump()};
  if (outcome)
    b.records.push_back(nlohmann::json{
        {"type", "rank_end"},
        {"restart", restart},
        {"failed", std::string(outcome) == "failed"},
        {"t_ns", t_ns + 9}}.dump());
  return b;
}

}  // namespace

class TestJobRanks : public QObject {
  Q_OBJECT

 private slots:
  void testEachRankWithItsPlaceAndState() {
    QTemporaryDir dir;
    const std::string file = dir.filePath("job.ddprun").toStdString();
    probes::RunStoreWriter w(file);
    w.begin_run({R"({"job":"collect"})", 4, "torch", "torch script"});
    w.write(placed(0, 0, "node-a", 0, "failed"));
    w.write(placed(0, 1, "node-c", 100, nullptr));  // its second attempt runs, elsewhere
    w.write(placed(1, 0, "node-a", 0, "ended"));
    w.write(placed(2, 0, "node-b", 9'000'000'000, nullptr));  // 9 s after rank 0
    const std::vector<JobRankRow> running = jobRanks(loadRun(file));
    QCOMPARE(running.size(), size_t{4});
    QCOMPARE(running[0].host, QStringLiteral("node-c"));
    QCOMPARE(running[0].attempt, 2);
    QCOMPARE(running[0].state, QStringLiteral("running"));
    QCOMPARE(running[1].state, QStringLiteral("ended"));
    QCOMPARE(running[1].localRank, 1);
    QCOMPARE(running[2].node, 1);
    QCOMPARE(running[2].state, QStringLiteral("running, joined 9.0 s late"));
    QCOMPARE(running[3].state, QStringLiteral("not joined yet"));
    QCOMPARE(running[3].attempt, 0);
    w.end_run("finished");
    const std::vector<JobRankRow> ended = jobRanks(loadRun(file));
    QCOMPARE(ended[0].state, QStringLiteral("vanished (never said it ended)"));
    QCOMPARE(ended[3].state, QStringLiteral("never joined"));
  }
};

DDPSCOPE_TEST_MAIN(TestJobRanks)
#include "tst_job_ranks.moc"
