// Importing flight-recorder dumps: 8 ranks' dumps become a run file with the same hang
// verdict and one process-group op per record; two dumps of one rank are refused.
#include <QtTest/QtTest>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "flight_grid.h"
#include "flight_import.h"
#include "hang_analysis.h"
#include "run_store_reader.h"
#include "made_dumps.h"

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
};

QTEST_GUILESS_MAIN(TestFlightImport)
#include "tst_flight_import.moc"
