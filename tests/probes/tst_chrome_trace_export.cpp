// The Chrome trace export of a run: one JSON that chrome://tracing and Perfetto open,
// with the run's spans, threads and ranks.
#include <QtTest/QtTest>

#include "known_runs.h"
#include "scratch_test.h"
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include "chrome_trace_export.h"
#include "kineto_export.h"
#include "sqlite_db.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

class TestChromeTraceExport : public ScratchTest {
  Q_OBJECT

 private slots:

  void testChromeTraceExport() {
    const std::string file = path("trace.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 2, "mpi", "mlp"});
      w.write(known_iteration(0));
      w.write(known_iteration(1, 100));
    }
    RunStoreReader r(file);
    const std::string out = path("trace.json");
    const int64_t n = export_chrome_trace(r, out);
    QFile f(QString::fromStdString(out));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    QVERIFY2(err.error == QJsonParseError::NoError, qPrintable(err.errorString()));
    const QJsonArray events = doc.object()["traceEvents"].toArray();
    QCOMPARE(events.size(), int(n));
    int complete = 0, instants = 0, process_names = 0, thread_names = 0;
    for (const QJsonValue& v : events) {
      const QJsonObject e = v.toObject();
      const QString ph = e["ph"].toString();
      if (ph == "X") {
        ++complete;
        QVERIFY(e["dur"].toDouble() > 0);
      }
      if (ph == "i") ++instants;
      if (e["name"] == "process_name") ++process_names;
      if (e["name"] == "thread_name") ++thread_names;
      if (e["cat"] == "allreduce" && e["pid"] == 1 && e["args"].toObject()["bucket"] == 1) {
        // Rank 1 is 100 ns behind: its bucket 1 starts at 750 ns = 0.75 us.
        QCOMPARE(e["ts"].toDouble(), 0.75);
        QCOMPARE(e["args"].toObject()["bytes"].toInt(), 8192);
      }
    }
    QCOMPARE(complete, 14);
    QCOMPARE(instants, 2);
    QCOMPARE(process_names, 2);
    QCOMPARE(thread_names, 4);
    QVERIFY(!QFile::exists(QString::fromStdString(out + ".partial")));
  }

  // A damaged run whose span name is not UTF-8: both exports refuse it in words that name
  // the name (its bytes escaped) and leave no file behind.
  void testANameThatIsNotUtf8IsRefusedAndLeavesNoFile() {
    const std::string file = path("damaged.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({"{}", 2, "mpi", "mlp"});
      w.write(known_iteration(0));
    }
    {
      SqliteDb db(file, SQLITE_OPEN_READWRITE);
      db.exec("UPDATE names SET name = CAST(X'666FFF80' AS TEXT) WHERE name = 'forward'");
    }
    RunStoreReader r(file);
    const std::string out = path("damaged.json");
    try {
      export_chrome_trace(r, out);
      QFAIL("the chrome export took a name that is not UTF-8");
    } catch (const Error& e) {
      QVERIFY2(std::string(e.what()).find("span name 'fo\\xFF\\x80' is not UTF-8 text") != std::string::npos, e.what());
    }
    QVERIFY(!QFile::exists(QString::fromStdString(out)));
    QVERIFY(!QFile::exists(QString::fromStdString(out + ".partial")));
    const std::string dir = path("damaged-kineto");
    QVERIFY_THROWS_EXCEPTION(Error, export_kineto_traces(r, dir, true));
    QVERIFY(!QFile::exists(QString::fromStdString(dir + "/rank0.pt.trace.json")));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestChromeTraceExport)
#include "tst_chrome_trace_export.moc"
