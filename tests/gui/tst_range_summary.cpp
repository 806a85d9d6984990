// A dragged range's sums, checked against SQL on the run file.
#include <QtTest/QtTest>
#include <QAbstractItemModelTester>
#include <map>
#include "gui_test_runs.h"
#include "overlap_model.h"
#include "run_data.h"
#include "sequence_data.h"
#include "range_summary.h"
#include "ruler_ticks.h"
#include "span_details.h"
#include "span_table.h"
#include "time_axis.h"
#include "time_format.h"
#include "timeline_search.h"
#include "track_layout.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestRangeSummary : public ScratchTest {
  Q_OBJECT

 private slots:
  // A dragged range's sums equal SQL over the same range of the run file.
  void testRangeSumsEqualSql() {
    const std::string file = path("range.ddprun");
    testing::write_test_run(file, 2, 5, "finished", 37);
    const RunData run = loadRun(file);
    for (auto [a, b] : {std::pair<int64_t, int64_t>{1250, 3710}, {0, 5037}, {640, 641}, {4999, 4000}}) {
      const RangeSummary sum = summarizeRange(run.timeline, a, b);
      std::map<std::pair<int, std::string>, std::tuple<int64_t, int64_t, int64_t>> mine;
      for (const RangeRow& r : sum.rows) {
        mine[{static_cast<int>(r.kind), r.name}] = {r.count, r.total_ns, r.longest_ns};
        const TimelineSpan* longest = run.timeline.resolve(r.longest);  // and it is that span
        QVERIFY(longest && longest->end_ns - longest->begin_ns == r.longest_ns && longest->kind == r.kind);
      }
      ddpscope::probes::SqliteDb db(file, SQLITE_OPEN_READONLY);
      ddpscope::probes::register_span_table(db.handle());  // SQL over the packs
      auto q = db.prepare(
          "SELECT s.kind, n.name, COUNT(*), SUM(MIN(s.t_end_ns, ?2) - MAX(s.t_begin_ns, ?1)), "
          "MAX(s.t_end_ns - s.t_begin_ns) FROM spans s "
          "JOIN names n ON n.name_id = s.name_id WHERE s.t_end_ns > ?1 AND s.t_begin_ns < ?2 "
          "AND s.t_end_ns > s.t_begin_ns GROUP BY s.kind, n.name");
      q.bind(1, std::min(a, b)).bind(2, std::max(a, b));
      std::map<std::pair<int, std::string>, std::tuple<int64_t, int64_t, int64_t>> sql;
      while (q.step())
        sql[{static_cast<int>(q.column_int64(0)), q.column_text(1)}] = {q.column_int64(2), q.column_int64(3),
                                                                        q.column_int64(4)};
      QVERIFY(!sql.empty());
      QCOMPARE(mine, sql);
      for (size_t i = 1; i < sum.rows.size(); ++i)
        QVERIFY(sum.rows[i - 1].total_ns >= sum.rows[i].total_ns);
    }
  }
};

DDPSCOPE_TEST_MAIN(TestRangeSummary)
#include "tst_range_summary.moc"
