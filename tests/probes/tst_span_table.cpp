// SQL over a run's spans through the `spans` table: the same rows the reader yields, with
// filters by kind, rank and time pushed into the packs.
#include <QtTest/QtTest>

#include "span_fixtures.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::span_fixtures;

class TestSpanTable : public ScratchTest {
  Q_OBJECT
 private slots:

  void testSqlOverSpansMatchesTheReader() {
    const std::string file = path("sql.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({.world_size = 2});
      for (int rank = 0; rank < 2; ++rank) {
        EventBatch b;
        b.rank = rank;
        b.threads = {{0, 1, "compute"}, {1, 2, "comm"}};
        b.names = {"iteration", "allreduce"};
        for (int i = 0; i < 9000; ++i) {  // packs of 4096 at most: three per thread
          const int64_t t = int64_t{i} * 1000;
          b.events.push_back(BatchEvent{t, t + 900, i % 3 ? -1 : 4096, i, -1, i / 100, -1, static_cast<uint32_t>(i % 2),
                                        -1, -1, static_cast<uint16_t>(i < 4500 ? 0 : 1),
                                        static_cast<uint8_t>(i % 2 ? Kind::Allreduce : Kind::Iteration), 0});
        }
        w.write(b);
      }
    }
    RunStoreReader r(file);
    SqliteDb db(file, SQLITE_OPEN_READONLY);
    register_span_table(db.handle());
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans"), r.span_count());
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans"), int64_t{18000});
    const auto allreduces =
        r.spans({.t_begin_ns = 2'000'000, .t_end_ns = 3'000'000, .kinds = {Kind::Allreduce}, .rank = 1});
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans WHERE rank = 1 AND kind = " +
                            std::to_string(static_cast<int>(Kind::Allreduce)) +
                            " AND t_begin_ns <= 3000000 AND t_end_ns >= 2000000"),
             static_cast<int64_t>(allreduces.size()));
    QVERIFY(!allreduces.empty());
    // NULL where a field is not set, as the table of rows had it; rowid is the span's id.
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans WHERE bytes IS NULL"), int64_t{12000});
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans WHERE rowid > 17990"), int64_t{10});
    QCOMPARE(db.query_int64("SELECT max(rowid) FROM spans"), int64_t{18000});
    QCOMPARE(db.query_int64("SELECT count(*) FROM spans s JOIN names n ON n.name_id = s.name_id "
                            "WHERE n.name = 'allreduce' AND s.iteration = 7"),
             int64_t{100});
    // What reads incrementally resumes after an id, across pack boundaries.
    QCOMPARE(every_span(r, {}, -1, 4000).size(), size_t{14000});
    QCOMPARE(every_span(r, {Kind::Iteration}, 0, 8000).size(), size_t{500});
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSpanTable)
#include "tst_span_table.moc"
