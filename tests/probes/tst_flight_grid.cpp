// The grid around a flight finding: the ranks and sequence numbers near the collective
// where they parted, and the same in words.
#include <QtTest/QtTest>

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

class TestFlightGrid : public FlightDumpTest {
  Q_OBJECT

 private slots:

  void testGridAroundTheFinding() {
    const HangReport h = analyze(2, [](int r) {
      std::vector<Call> calls = healthy();
      if (r == 0) calls.push_back({.state = "started"});
      return calls;
    });
    const FlightGrid g = flight_grid(h.records, finding(h), 2, 2);
    QCOMPARE(g.ranks, (std::vector<int>{0, 1}));
    QCOMPARE(g.seqs, (std::vector<int64_t>{4, 5, 6}));
    QVERIFY(g.cell(0, 2) && g.cell(0, 2)->state == "started");
    QVERIFY(!g.cell(1, 2));
    const QString text = QString::fromStdString(flight_grid_text(g));
    QVERIFY2(text.contains(">#6") && text.contains("last: #5"), qPrintable(text));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightGrid)
#include "tst_flight_grid.moc"
