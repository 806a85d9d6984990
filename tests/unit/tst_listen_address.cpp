// Which local address other hosts reach this one on: the route towards loopback starts
// at loopback, a name that does not resolve gives nothing, and the last-resort address
// is one of the host's own and never a loopback one.
#include <QtTest/QtTest>

#include <QProcess>
#include <QRegularExpression>
#include <arpa/inet.h>

#include "rpc/listen_address.h"
#include "test_registry.h"

using namespace ddpscope::rpc;

class TestListenAddress : public QObject {
  Q_OBJECT

 private slots:
  void testTheRouteToLoopbackStartsThere() {
    QCOMPARE(local_address_towards("127.0.0.1"), std::string("127.0.0.1"));
    QCOMPARE(local_address_towards("localhost"), std::string("127.0.0.1"));
  }

  void testANameThatDoesNotResolveGivesNothing() {
    QCOMPARE(local_address_towards("no-such-host.invalid"), std::string());
    QCOMPARE(local_address_towards(""), std::string());
  }

  // Checked against `ip -4 addr` (iproute2): empty exactly when the host has no IPv4
  // address but loopback, else one of its own.
  void testTheLastResortIsAnExternalIpv4() {
    QProcess ip;
    ip.start("ip", {"-4", "-o", "addr", "show"});
    QVERIFY2(ip.waitForFinished(10000) && ip.exitCode() == 0, "ip -4 addr failed");
    QStringList external;
    const QRegularExpression inet(R"(\binet (\d+\.\d+\.\d+\.\d+)/)");
    for (const QString& line : QString::fromUtf8(ip.readAllStandardOutput()).split('\n')) {
      const auto m = inet.match(line);
      if (m.hasMatch() && !m.captured(1).startsWith("127.")) external << m.captured(1);
    }
    const std::string a = first_external_ipv4();
    if (external.isEmpty()) {
      QCOMPARE(a, std::string());
      return;
    }
    QVERIFY2(external.contains(QString::fromStdString(a)),
             qPrintable(QString::fromStdString(a) + " not in " + external.join(", ")));
    in_addr address{};
    QVERIFY2(inet_pton(AF_INET, a.c_str(), &address) == 1, a.c_str());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestListenAddress)
#include "tst_listen_address.moc"
