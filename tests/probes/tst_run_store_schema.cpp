// The run file's schema: its version, WAL while the run is written (readers follow it),
// one self-contained file after.
#include <QtTest/QtTest>

#include "known_runs.h"
#include "scratch_test.h"
#include <QDir>
#include "run_store_schema.h"
#include "sqlite_db.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

class TestRunStoreSchema : public ScratchTest {
  Q_OBJECT

 private slots:

  // WAL while the run is written (readers follow it), one self-contained file after.
  void testSchemaVersionAndWal() {
    const std::string file = path("schema.ddprun");
    const auto journal_mode = [&] {
      SqliteDb db(file, SQLITE_OPEN_READONLY);
      Statement mode = db.prepare("PRAGMA journal_mode");
      return mode.step() ? mode.column_text(0) : std::string();
    };
    {
      RunStoreWriter w(file);
      QCOMPARE(journal_mode(), std::string("wal"));
      QVERIFY(QFile::exists(QString::fromStdString(file + "-wal")));
    }
    QCOMPARE(journal_mode(), std::string("delete"));
    QVERIFY(!QFile::exists(QString::fromStdString(file + "-wal")));
    QVERIFY(!QFile::exists(QString::fromStdString(file + "-shm")));
    SqliteDb db(file, SQLITE_OPEN_READONLY);
    QCOMPARE(schema_version(db), kRunStoreSchemaVersion);
    QCOMPARE(db.query_int64("SELECT count(*) FROM kinds"), int64_t(kNumKinds));
    // The packs' index the views' queries go through (by rank, time and kind).
    QCOMPARE(db.query_int64("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                            "'span_packs_by_rank_time'"),
             int64_t(1));
    QCOMPARE(db.query_int64("PRAGMA page_size"), int64_t(16384));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunStoreSchema)
#include "tst_run_store_schema.moc"
