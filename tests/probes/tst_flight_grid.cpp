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

  // Wide ranks and numbers keep their columns apart (issue 68: "9999999S").
  void testWideRanksAndNumbersStayApart() {
    CollectiveRow row;
    row.rank = 9999999;
    row.collective_seq = 123456789012;
    row.op = "all_reduce";
    row.state = "started";
    FlightGrid g;
    g.group = "0";
    g.ranks = {9999999};
    g.seqs = {123456789012};
    g.focus_seq = 123456789012;
    g.cells = {{&row}};
    const QString text = QString::fromStdString(flight_grid_text(g));
    const QStringList lines = text.split('\n');
    QVERIFY2(lines.size() >= 3, qPrintable(text));
    QVERIFY2(lines[1].startsWith("rank ") && lines[1].contains(" >#123456789012"), qPrintable(text));
    QVERIFY2(lines[2].startsWith("9999999 ") && lines[2].contains(" S "), qPrintable(text));
    // The state sits under its column's number.
    QCOMPARE(lines[2].indexOf(" S ") + 1, lines[1].indexOf(">#"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightGrid)
#include "tst_flight_grid.moc"
