// CSV export of a table: a header of the columns and a row per row, written whole to a
// file; a path that cannot be written is named in the error.
#include <QtTest/QtTest>

#include <QAbstractItemModelTester>
#include <QFile>

#include "bucket_table_model.h"
#include "csv_export.h"
#include "gui_test_runs.h"
#include "overlap_model.h"
#include "run_data.h"
#include "ruler_ticks.h"
#include "time_breakdown.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::probes;

class TestCsvExport : public ScratchTest {
  Q_OBJECT

 private slots:

  void testCsvOfATable() {
    const std::string file = path("csv.ddprun");
    testing::write_test_run(file, 1, 2);
    const RunData run = loadRun(file);
    BucketTableModel model;
    model.setRun(&run, 0, 1);
    const QStringList lines = toCsv(model).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);  // header + 2 buckets
    QVERIFY(lines[0].startsWith("Bucket,Ready order,Bytes"));
    QVERIFY2(lines[2].endsWith(",1: b"), qPrintable(lines[2]));
    QString error;
    const QString out = scratch_file("buckets.csv");
    QVERIFY(writeCsv(model, out, &error));
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(f.readAll()), toCsv(model));
    QVERIFY(!writeCsv(model, "/nonexistent/dir/x.csv", &error));
    QVERIFY2(error.contains("/nonexistent/dir/x.csv"), qPrintable(error));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCsvExport)
#include "tst_csv_export.moc"
