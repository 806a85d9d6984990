// Reading run files: readers write nothing, queries by window, kind, rank and iteration,
// a run read while its writer goes on, and clear errors for files that are damaged,
// foreign, newer or built to exhaust memory.
#include <QtTest/QtTest>

#include "known_runs.h"
#include "scratch_test.h"
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include "sqlite_db.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

class TestRunStoreReader : public ScratchTest {
  Q_OBJECT

 private slots:

  // Reading a run writes nothing beside it, a run left in WAL mode (an older build's, or
  // one a reader held open at the end) included: no -wal, no -shm, folder unchanged.
  void testReadersWriteNothing() {
    QTemporaryDir folder;
    const std::string file = folder.filePath("old.ddprun").toStdString();
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 1, "none", "mlp"});
      w.write(known_iteration(0));
      w.end_run("finished");
    }
    {
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("PRAGMA journal_mode=WAL");  // as an older build left its runs
    }
    const QStringList before = QDir(folder.path()).entryList(QDir::Files | QDir::Hidden);
    QCOMPARE(before, QStringList{"old.ddprun"});
    {
      RunStoreReader reader(file);
      QCOMPARE(reader.run().status, std::string("finished"));
      QCOMPARE(reader.span_count(), int64_t{8});
      QCOMPARE(QDir(folder.path()).entryList(QDir::Files | QDir::Hidden), before);  // while open
    }
    QCOMPARE(QDir(folder.path()).entryList(QDir::Files | QDir::Hidden), before);
  }

  void testQueriesByWindowKindRankAndIteration() {
    const std::string file = path("query.ddprun");
    RunStoreWriter w(file);
    w.begin_run({});
    w.write(known_iteration(0));
    w.write(known_iteration(1, 5000));  // rank 1's times land 5000 ns later
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t(16));
    QCOMPARE(r.spans({.kinds = {Kind::Allreduce}}).size(), size_t(4));
    QCOMPARE(r.spans({.kinds = {Kind::Allreduce}, .rank = 1}).size(), size_t(2));
    // Spans overlapping [600, 700] on rank 0: iteration, backward, finalize, allreduce 1,
    // and the ready instant at 640.
    QCOMPARE(r.spans({.t_begin_ns = 600, .t_end_ns = 700, .rank = 0}).size(), size_t(5));
    const auto shifted = r.spans({.kinds = {Kind::Iteration}, .rank = 1});
    QCOMPARE(shifted.at(0).t_begin_ns, int64_t(5000));
    QCOMPARE(r.time_range(), (std::pair<int64_t, int64_t>{0, 6000}));
    QCOMPARE(r.spans({.iteration = 2}).size(), size_t(0));
    QCOMPARE(r.spans({.limit = 3}).size(), size_t(3));
  }

  void testReadableWhileTheWriterGoesOn() {
    const std::string file = path("live.ddprun");
    RunStoreWriter w(file);
    w.begin_run({});
    w.write(known_iteration(0));
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t(8));
    QCOMPARE(r.run().status, std::string("running"));
    w.write(known_iteration(1));
    QCOMPARE(r.span_count(), int64_t(16));
    w.end_run("finished");
    QCOMPARE(r.run().status, std::string("finished"));
  }

  // One long name shared by many spans: each row would copy it (4.5 MB by 400 marks made
  // 1.9 GB), so the read is refused for what the rows would hold (issue 49).
  void testLongNamesRepeatedAreRefused() {
    const std::string file = path("long-names.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "main"}};
      b.names = {std::string(1 << 20, 'n')};
      for (int i = 0; i < 300; ++i)
        b.events.push_back(::event(Kind::Mark, 0, 10 * i, 10 * i, 1));
      w.write(b);
      w.end_run("finished");
    }
    RunStoreReader r(file);
    QCOMPARE(r.span_count(), int64_t{300});
    try {
      r.spans({.kinds = {Kind::Mark}});
      QFAIL("300 copies of a 1 MiB name were made");
    } catch (const RunStoreError& e) {
      QVERIFY2(QString(e.what()).contains("the 300 spans read carry 300 MiB of names, more than 256 MiB"), e.what());
    }
    QCOMPARE(r.spans({.kinds = {Kind::Mark}, .limit = 10}).size(), size_t{10});  // a few are fine
  }

  void testBadFilesGetClearErrors_data() {
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("expected");
    QTest::newRow("not a database") << "garbage"
                                    << "not a ddpscope run file";
    QTest::newRow("truncated") << "truncate"
                               << "damaged";
    QTest::newRow("newer schema") << "newer"
                                  << "newer ddpscope";
    QTest::newRow("other database") << "foreign"
                                    << "not a ddpscope run file";
    QTest::newRow("missing") << "missing"
                             << "check that the file exists";
    // Packs are compressed: a file may claim no more spans than one per 2 of its bytes
    // (zstd's runs of zeros made 6.7 billion spans of an 8.7 MB file; issue 49).
    QTest::newRow("claims more spans than it can hold") << "dense"
                                                        << "more than one span per 2 bytes";
  }

  void testBadFilesGetClearErrors() {
    QFETCH(QString, damage);
    QFETCH(QString, expected);
    const std::string file = path(qPrintable("bad-" + damage + ".ddprun"));
    if (damage == "garbage") {
      QFile f(QString::fromStdString(file));
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray(8192, 'x'));
    } else if (damage == "truncate") {
      {
        RunStoreWriter w(file);
        w.begin_run({});
        for (int i = 0; i < 200; ++i)
          w.write(known_iteration(i % 4));
      }
      QFile f(QString::fromStdString(file));
      QVERIFY(f.size() > 32768);
      QVERIFY(f.resize(f.size() / 2));
    } else if (damage == "newer") {
      { RunStoreWriter w(file); }
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("PRAGMA user_version = 99");
    } else if (damage == "dense") {
      {
        RunStoreWriter w(file);
        w.begin_run({});
        w.write(known_iteration(0));
      }
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("UPDATE span_packs SET count = 100000000 WHERE first_id = (SELECT min(first_id) FROM span_packs)");
    } else if (damage == "foreign") {
      SqliteDb db(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      db.exec("CREATE TABLE t(x)");
    }
    // Reading everything must end in a RunStoreError naming the problem, not a crash.
    QString message;
    try {
      RunStoreReader r(file);
      r.run();
      r.spans();
      r.ranks();
      r.buckets(0);
      r.metrics();
      const std::string verdict = r.integrity_check();
      message = QString::fromStdString("read without error; integrity: " + verdict);
    } catch (const RunStoreError& e) {
      message = QString::fromStdString(e.message());
    }
    QVERIFY2(message.contains(expected), qPrintable(message));
    // A writer refuses the same files (except a missing one, which it creates).
    if (damage == "newer" || damage == "foreign") {
      QVERIFY_THROWS_EXCEPTION(RunStoreError, RunStoreWriter w(file));
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunStoreReader)
#include "tst_run_store_reader.moc"
