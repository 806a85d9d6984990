// `ddpscope-cli torchrun`'s pieces that need no job: where the script is among the
// launcher's own options, the run file of each restart, the torch variables passed to
// other hosts, and the checks made before anything starts.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <fstream>

#include "apps/torchrun_launch.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::apps;

class TestTorchrunLaunch : public QObject {
  Q_OBJECT

 private slots:
  void testTheScriptAmongTheLaunchersOptions() {
    using V = std::vector<std::string>;
    QCOMPARE(torchrun_script_position(V{"train.py", "--lr", "0.1"}), size_t{0});
    QCOMPARE(torchrun_script_position(V{"--np", "2", "train.py", "--np", "8"}), size_t{2});  // the script's own --np
    QCOMPARE(torchrun_script_position(V{"--np=2", "--force", "train.py"}), size_t{2});
    QCOMPARE(torchrun_script_position(V{"--np", "2", "-m", "pkg.train"}), size_t{3});
    QCOMPARE(torchrun_script_position(V{"--np", "2", "--", "-weird.py"}), size_t{3});
    QCOMPARE(torchrun_script_position(V{"--np", "2"}), size_t{2});  // none
  }

  void testEachRestartHasARunFileOfItsOwn() {
    QCOMPARE(restart_run_file("/runs/job.ddprun", 1), std::string("/runs/job.restart1.ddprun"));
    QCOMPARE(restart_run_file("job.ddprun", 3), std::string("job.restart3.ddprun"));
    QCOMPARE(restart_run_file("/runs/job", 2), std::string("/runs/job.restart2.ddprun"));
    QCOMPARE(restart_run_file("", 2), std::string());  // a fresh workspace file each time
  }

  void testTheTorchVariablesGoToOtherHosts() {
    QStringList names;
    for (const char* const* n = torch_environment_names(); *n; ++n)
      names << *n;
    for (const char* needed : {"PYTHONPATH", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TORCHELASTIC_RESTART_COUNT"})
      QVERIFY2(names.contains(needed), needed);
  }

  void testWhatIsCheckedBeforeAnythingStarts() {
    QTemporaryDir dir;
    LaunchOptions launch;
    launch.np = 2;
    TorchrunOptions missing;
    missing.python = default_python();
    missing.script = dir.filePath("no_such_script.py").toStdString();
    try {
      torchrun_worker_arguments(missing, launch);
      QFAIL("a script that is not there was accepted");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("no_such_script.py"), e.what());
    }
    TorchrunOptions ok;
    ok.python = default_python();
    ok.script = dir.filePath("train.py").toStdString();
    std::ofstream(ok.script) << "print('hi')\n";
    const auto args = torchrun_worker_arguments(ok, launch);
    QVERIFY(!ok.master_addr.empty());  // filled in by the launcher
    QVERIFY(ok.master_port > 0 && ok.master_port < 32768);
    QVERIFY(std::find(args.begin(), args.end(), ok.script) != args.end());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTorchrunLaunch)
#include "tst_torchrun_launch.moc"
