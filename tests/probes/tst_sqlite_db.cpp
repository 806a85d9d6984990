// The thin layer over SQLite: values bound and read back (-1 as NULL both ways, blobs,
// text), statements run again after a rewind, and every failure a RunStoreError naming
// the file, what was being done, SQLite's words and what to do.
#include <QtTest/QtTest>

#include <QFile>

#include "scratch_test.h"
#include "sqlite_db.h"
#include "test_registry.h"

using namespace ddpscope::probes;

class TestSqliteDb : public ScratchTest {
  Q_OBJECT

  QString refusal(const std::function<void()>& f) {
    try {
      f();
    } catch (const RunStoreError& e) {
      return QString::fromStdString(e.message());
    }
    return QString();
  }

 private slots:
  void testValuesRoundTrip() {
    SqliteDb db(path("db.sqlite"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    db.exec("CREATE TABLE t(i INTEGER, o INTEGER, d REAL, s TEXT, b BLOB)");
    Statement insert = db.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?)");
    const char bytes[] = {1, 0, 2, 0};
    for (int64_t k = 0; k < 3; ++k) {
      insert.bind(1, k)
          .bind_optional(2, k == 1 ? -1 : k * 10)
          .bind(3, 0.5 * k)
          .bind(4, std::string("row ") + std::to_string(k));
      insert.bind_blob(5, bytes, sizeof bytes);
      QVERIFY(!insert.step());
      insert.rewind();
    }
    QCOMPARE(db.query_int64("SELECT count(*) FROM t"), int64_t{3});
    Statement read = db.prepare("SELECT i, o, d, s, b FROM t ORDER BY i");
    std::vector<int64_t> optional;
    while (read.step()) {
      optional.push_back(read.column_optional(1));
      QVERIFY(read.column_is_text(3));
      QCOMPARE(read.column_text(3), "row " + std::to_string(read.column_int64(0)));
      const auto [p, n] = read.column_blob(4);
      QCOMPARE(n, sizeof bytes);
      QCOMPARE(std::memcmp(p, bytes, n), 0);
    }
    QCOMPARE(optional, (std::vector<int64_t>{0, -1, 20}));  // NULL reads as -1
  }

  void testFailuresSayWhatAndWhere() {
    const QString missing = refusal([&] { SqliteDb db(path("nowhere/x.sqlite"), SQLITE_OPEN_READONLY); });
    QVERIFY2(missing.contains("nowhere/x.sqlite") && missing.contains("check that the file exists"),
             qPrintable(missing));
    QFile f(QString::fromStdString(path("text.sqlite")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(4096, 'x'));
    f.close();
    const QString notadb = refusal([&] {
      SqliteDb db(path("text.sqlite"), SQLITE_OPEN_READONLY);
      db.query_int64("SELECT count(*) FROM sqlite_master");
    });
    QVERIFY2(notadb.contains("not a ddpscope run file"), qPrintable(notadb));
    SqliteDb db(path("db2.sqlite"), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    const QString bad = refusal([&] { db.exec("SELECT * FROM no_such_table"); });
    QVERIFY2(bad.contains("running 'SELECT * FROM no_such_table'") && bad.contains("no such table"), qPrintable(bad));
    const QString prepare = refusal([&] { db.prepare("SELEC 1"); });
    QVERIFY2(prepare.contains("preparing 'SELEC 1'"), qPrintable(prepare));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSqliteDb)
#include "tst_sqlite_db.moc"
