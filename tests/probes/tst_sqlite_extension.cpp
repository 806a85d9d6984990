// The SQLite extension: Python's sqlite3 loads it and queries a run's spans as a table.
#include <QtTest/QtTest>

#include "span_fixtures.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::span_fixtures;

class TestSqliteExtension : public ScratchTest {
  Q_OBJECT
 private slots:

  void testSqliteExtensionFromPython() {
    // As a user queries a run: Python's sqlite3 with the extension loaded.
    const std::string file = path("python.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({});
      EventBatch b;
      b.names = {"forward"};
      for (int i = 0; i < 10; ++i)
        b.events.push_back(
            BatchEvent{i * 10, i * 10 + 5, -1, -1, -1, i, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Forward), 0});
      w.write(b);
    }
    QProcess python;
    python.start("/usr/bin/python3",
                 {"-c",
                  "import sqlite3, sys\n"
                  "db = sqlite3.connect(sys.argv[1])\n"
                  "db.enable_load_extension(True)\n"
                  "db.load_extension(sys.argv[2])\n"
                  "print(db.execute('SELECT count(*), sum(t_end_ns - t_begin_ns) FROM spans WHERE iteration >= 5')"
                  ".fetchone())\n",
                  QString::fromStdString(file), DDPSCOPE_SQLITE_EXTENSION});
    QVERIFY(python.waitForFinished(30000));
    QCOMPARE(python.exitCode(), 0);
    QCOMPARE(QString(python.readAllStandardOutput()).trimmed(), QString("(5, 25)"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestSqliteExtension)
#include "tst_sqlite_extension.moc"
