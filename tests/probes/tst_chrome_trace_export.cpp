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
};

DDPSCOPE_TEST_GUILESS_MAIN(TestChromeTraceExport)
#include "tst_chrome_trace_export.moc"
