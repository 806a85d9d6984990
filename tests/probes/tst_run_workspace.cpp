// The workspace folder for runs: DDPSCOPE_WORKSPACE, else $XDG_DATA_HOME/ddpscope/runs,
// else ~/.local/share/ddpscope/runs, created when missing; new run names are dated and
// never taken twice; a folder that cannot be made is named with what to do.
#include <QtTest/QtTest>

#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <cstdlib>

#include "ddpscope/error.h"
#include "run_workspace.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

// Sets the three variables for one test and restores them after.
class Environment {
 public:
  Environment(const QByteArray& workspace, const QByteArray& xdg, const QByteArray& home) {
    for (const char* name : {"DDPSCOPE_WORKSPACE", "XDG_DATA_HOME", "HOME"})
      saved_.append({name, qgetenv(name), qEnvironmentVariableIsSet(name)});
    set("DDPSCOPE_WORKSPACE", workspace);
    set("XDG_DATA_HOME", xdg);
    set("HOME", home);
  }
  ~Environment() {
    for (const auto& s : saved_)
      s.was_set ? qputenv(s.name, s.value) : qunsetenv(s.name);
  }

 private:
  static void set(const char* name, const QByteArray& v) { v.isNull() ? qunsetenv(name) : qputenv(name, v); }
  struct Saved {
    const char* name;
    QByteArray value;
    bool was_set;
  };
  QList<Saved> saved_;
};

}  // namespace

class TestRunWorkspace : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void testTheFolderFollowsTheEnvironment() {
    const QByteArray root = dir_.path().toUtf8();
    {
      Environment env(root + "/ws", root + "/xdg", root + "/home");
      QCOMPARE(workspace_folder(), (root + "/ws").toStdString());
    }
    {
      Environment env(QByteArray(), root + "/xdg", root + "/home");
      QCOMPARE(workspace_folder(), (root + "/xdg/ddpscope/runs").toStdString());
    }
    {
      Environment env(QByteArray(), QByteArray(), root + "/home");
      QCOMPARE(workspace_folder(), (root + "/home/.local/share/ddpscope/runs").toStdString());
      QVERIFY(QFileInfo(root + "/home/.local/share/ddpscope/runs").isDir());  // created
    }
  }

  void testNewRunNamesAreDatedAndNeverTakenTwice() {
    Environment env(dir_.path().toUtf8() + "/names", QByteArray(), QByteArray());
    const QString first = QString::fromStdString(new_run_path());
    QVERIFY2(QRegularExpression("/run-\\d{8}-\\d{6}(-\\d+)?\\.ddprun$").match(first).hasMatch(), qPrintable(first));
    QFile f(first);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    const QString second = QString::fromStdString(new_run_path());
    QVERIFY2(second != first, qPrintable(second));
    QVERIFY(!QFile::exists(second));
  }

  void testAFolderThatCannotBeMadeIsNamed() {
    Environment env("/proc/ddpscope-runs", QByteArray(), QByteArray());
    try {
      workspace_folder();
      QFAIL("made a folder under /proc");
    } catch (const ddpscope::Error& e) {
      const QString why = e.what();
      QVERIFY2(why.contains("/proc/ddpscope-runs") && why.contains("DDPSCOPE_WORKSPACE"), e.what());
    }
    Environment none{QByteArray(), QByteArray(), QByteArray()};
    try {
      workspace_folder();
      QFAIL("found a workspace without HOME");
    } catch (const ddpscope::Error& e) {
      QVERIFY2(QString(e.what()).contains("HOME is not set"), e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRunWorkspace)
#include "tst_run_workspace.moc"
