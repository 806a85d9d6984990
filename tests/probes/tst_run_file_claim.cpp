// Claiming a run file: a new file is created and held; a second claim on it, while held,
// is refused naming this process; an existing run is kept unless replaced, and then
// nothing of it survives; a file ddpscope did not write is never touched; a folder that
// cannot be written is named.
#include <QtTest/QtTest>

#include <QFile>
#include <unistd.h>

#include "known_runs.h"
#include "run_file_claim.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::known_runs;

class TestRunFileClaim : public ScratchTest {
  Q_OBJECT

  QString refusal(const std::string& file, bool replace) {
    try {
      RunFileClaim claim(file, replace);
    } catch (const RunStoreError& e) {
      return QString::fromStdString(e.message());
    }
    return QString();
  }

 private slots:
  void testASecondClaimWhileHeldIsRefusedNamingTheHolder() {
    const std::string file = path("held.ddprun");
    {
      RunFileClaim first(file, false);
      QVERIFY(QFile::exists(QString::fromStdString(file)));
      const QString why = refusal(file, true);
      QVERIFY2(why.contains("being written by another job"), qPrintable(why));
      QVERIFY2(why.contains(QString("pid %1").arg(getpid())), qPrintable(why));
    }
    // Released with its holder: the empty file is claimed again.
    RunFileClaim again(file, false);
  }

  void testAnExistingRunIsKeptUnlessReplaced() {
    const std::string file = path("kept.ddprun");
    {
      RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      w.write(known_iteration(0));
      w.end_run("finished", "", 0);
    }
    const qint64 size = QFile(QString::fromStdString(file)).size();
    const QString why = refusal(file, false);
    QVERIFY2(why.contains("already holds") && why.contains("--force"), qPrintable(why));
    QCOMPARE(QFile(QString::fromStdString(file)).size(), size);  // untouched
    {
      RunFileClaim replaced(file, true);
      QCOMPARE(QFile(QString::fromStdString(file)).size(), qint64{0});
      QVERIFY(!QFile::exists(QString::fromStdString(file + "-wal")));
    }
  }

  void testAFileDdpscopeDidNotWriteIsNeverTouched() {
    const std::string file = path("notes.txt");
    QFile f(QString::fromStdString(file));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("my notes\n");
    f.close();
    const QString why = refusal(file, true);
    QVERIFY2(why.contains("not a ddpscope run file") && why.contains("left untouched"), qPrintable(why));
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("my notes\n"));
  }

  void testAFolderThatCannotBeWrittenIsNamed() {
    const QString why = refusal("/nonexistent-folder/run.ddprun", false);
    QVERIFY2(why.contains("cannot open run file '/nonexistent-folder/run.ddprun'"), qPrintable(why));
    QVERIFY2(why.contains("choose a path in a folder you can write to"), qPrintable(why));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunFileClaim)
#include "tst_run_file_claim.moc"
