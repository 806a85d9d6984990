// Importing flight-recorder dumps: 8 ranks' dumps become a run file with the same hang
// verdict and one process-group op per record; two dumps of one rank are refused.
#include <QtTest/QtTest>

#include <algorithm>
#include <filesystem>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "flight_grid.h"
#include "flight_import.h"
#include "hang_analysis.h"
#include "run_store_reader.h"
#include "made_dumps.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::made_dumps;

class TestFlightImport : public FlightDumpTest {
  Q_OBJECT

 private slots:

  void testDumpsImportAsARunWithTheSameVerdict() {
    std::vector<std::string> files;
    const HangReport direct = analyze(
        8,
        [](int r) {
          std::vector<Call> calls = healthy();
          if (r != 3) calls.push_back({.state = "started"});
          return calls;
        },
        &files);
    const std::string out = path("imported.ddprun");
    const FlightImportResult result = import_flight_dumps(files, out);
    QCOMPARE(result.world_size, 8);
    QCOMPARE(result.records, int64_t(8 * 5 + 7));
    RunStoreReader run(out);
    QCOMPARE(run.run().status, std::string("failed"));
    const HangReport from_run = analyze_hang(run);
    QCOMPARE(from_run.culprits, std::vector<int>{3});
    QCOMPARE(from_run.verdict.substr(0, 120), direct.verdict.substr(0, 120));
    // Each record with times is a process-group op on its rank's timeline.
    const auto spans = run.spans();
    QCOMPARE(std::count_if(spans.begin(), spans.end(), [](const SpanRow& s) { return s.kind == Kind::PgOp; }),
             long(8 * 5));
    QVERIFY_THROWS_EXCEPTION(RunStoreError, import_flight_dumps(files, out));  // exists, no force
  }

  void testTwoDumpsOfOneRankAreRefused() {
    const std::string a = path("a_rank_1"), b = path("b_rank_1");
    std::ofstream(a) << torch_dump(2, healthy()).dump();
    std::ofstream(b) << torch_dump(2, healthy()).dump();
    try {
      read_flight_dumps({a, b});
      QFAIL("read two dumps of rank 1");
    } catch (const RunStoreError& e) {
      QVERIFY2(QString(e.what()).contains("both rank 1's dump"), e.what());
    }
  }

  // PyTorch 2.11's own gloo dumps (its recorder tracks no start or end): the records it
  // completed are finished on the run's timeline, so only the collective rank 0 really
  // waits in (#19, which rank 1 never called) is open, not "#1" of every rank.
  void testCompletedRecordsWithoutTimesAreFinished() {
    const std::string folder = DDPSCOPE_SOURCE_DIR "/tests/probes/data/torch_2_11_flight/gloo-2-missing/json";
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(folder))
      files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    const std::string out = path("gloo.ddprun");
    import_flight_dumps(files, out);
    RunStoreReader run(out);
    const HangReport h = analyze_hang(run);
    QCOMPARE(h.ranks.size(), size_t{2});
    QVERIFY(h.ranks[0].blocked_in.has_value());
    QCOMPARE(h.ranks[0].blocked_in->seq, int64_t{19});
    QVERIFY2(!h.ranks[1].blocked_in.has_value(), "rank 1 completed all it called");
    // The dumps record no iterations: no rank is said to be "in iteration 1 (forward)".
    for (const std::string& f : h.findings)
      QVERIFY2(f.find("iteration 1") == std::string::npos, f.c_str());
    QVERIFY2(h.verdict.find("iteration 1") == std::string::npos, h.verdict.c_str());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightImport)
#include "tst_flight_import.moc"
