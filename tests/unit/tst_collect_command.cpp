// `ddpscope-cli collect`'s pieces: --listen read as HOST or HOST:PORT (IPv6 in brackets),
// a bad one named with what to give; the environment a job needs, in the order printed;
// the desktop app --follow starts.
#include <QtTest/QtTest>

#include <QProcess>
#include <QTemporaryDir>

#include "apps/collect_command.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::apps;

class TestCollectCommand : public QObject {
  Q_OBJECT

 private slots:
  void testListen() {
    QCOMPARE(parse_listen("10.0.0.5"), (std::pair<std::string, int>{"10.0.0.5", 0}));
    QCOMPARE(parse_listen("node1:29600"), (std::pair<std::string, int>{"node1", 29600}));
    QCOMPARE(parse_listen("[::1]:7000"), (std::pair<std::string, int>{"::1", 7000}));
    QCOMPARE(parse_listen("[fe80::1]"), (std::pair<std::string, int>{"fe80::1", 0}));
    QCOMPARE(parse_listen("fe80::1"), (std::pair<std::string, int>{"fe80::1", 0}));  // IPv6 alone
    for (const char* bad :
         {"", ":29600", "node1:", "node1:port", "node1:65535", "node1:0", "[::1", "[::1]7000", "[::1]:"}) {
      try {
        parse_listen(bad);
        QFAIL(qPrintable(QString("accepted '%1'").arg(bad)));
      } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains("--listen"), e.what());
      }
    }
  }

  // --follow's app: $DDPSCOPE_APP, else beside ddpscope-cli (not here: a test binary), else
  // an executable `ddpscope` on PATH, else none.
  void testTheDesktopAppIsFound() {
    QTemporaryDir bin;
    const QString app = bin.filePath("ddpscope");
    QFile f(app);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("#!/bin/sh\n");
    f.close();
    const QByteArray path = qgetenv("PATH");
    qunsetenv("DDPSCOPE_APP");
    qputenv("PATH", "/nonexistent:" + bin.path().toUtf8());
    QCOMPARE(find_desktop_app(), std::string());  // not executable: not an app
    f.setPermissions(f.permissions() | QFileDevice::ExeOwner);
    QCOMPARE(find_desktop_app(), app.toStdString());
    qputenv("DDPSCOPE_APP", "/opt/other/ddpscope");
    QCOMPARE(find_desktop_app(), std::string("/opt/other/ddpscope"));
    qunsetenv("DDPSCOPE_APP");
    qputenv("PATH", "/nonexistent");
    QCOMPARE(find_desktop_app(), std::string());
    qputenv("PATH", path);
  }

  void testTheJobsEnvironment() {
    const auto env = job_environment("tcp://10.0.0.5:29600", "tcp://10.0.0.5:29601", "abc");
    std::vector<std::string> names;
    for (const auto& [name, value] : env)
      names.push_back(name);
    QCOMPARE(names, (std::vector<std::string>{"DDPSCOPE_COLLECTOR", "DDPSCOPE_COLLECTOR_CLOCK", "DDPSCOPE_RUN_TOKEN",
                                              "PYTHONPATH", "DDPSCOPE_PROBES_LIB"}));
    QCOMPARE(env[0].second, std::string("tcp://10.0.0.5:29600"));
    QCOMPARE(env[2].second, std::string("abc"));
    QVERIFY2(env[3].second.find("probes/python") != std::string::npos ||
                 env[3].second.find("share/ddpscope/python") != std::string::npos,
             env[3].second.c_str());
    QVERIFY(env[4].second.ends_with("libddpscope_probes_c.so"));
  }

  // --measure-links: one more variable, last; none without it.
  void testMeasureLinksIsOptIn() {
    QCOMPARE(job_environment("tcp://h:1", "tcp://h:2", "t").size(), size_t{5});
    const auto env = job_environment("tcp://h:1", "tcp://h:2", "t", true);
    QCOMPARE(env.size(), size_t{6});
    QCOMPARE(env.back(), (std::pair<std::string, std::string>{"DDPSCOPE_MEASURE_LINKS", "1"}));
  }

  // The printed PYTHONPATH as a shell reads it: the job's own path kept after ours, and no
  // empty entry (the current folder) when the job has none.
  void testThePrintedPythonPathHasNoEmptyEntry() {
    const auto env = job_environment("tcp://10.0.0.5:29600", "tcp://10.0.0.5:29601", "abc");
    const std::string ours = env[3].second.substr(0, env[3].second.find('$'));
    const auto shell_reads = [&](const char* before) {
      QProcess sh;
      const QString script = QString("%1 export PYTHONPATH=\"%2\"; printf '%s' \"$PYTHONPATH\"")
                                 .arg(before, QString::fromStdString(env[3].second));
      sh.start("/bin/sh", {"-c", script});
      sh.waitForFinished();
      return sh.readAllStandardOutput().toStdString();
    };
    QCOMPARE(shell_reads("unset PYTHONPATH;"), ours);
    QCOMPARE(shell_reads("PYTHONPATH=;"), ours);
    QCOMPARE(shell_reads("PYTHONPATH=/job/lib;"), ours + ":/job/lib");
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestCollectCommand)
#include "tst_collect_command.moc"
