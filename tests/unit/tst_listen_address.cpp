// Which local address other hosts reach this one on: the route towards loopback starts
// at loopback, a name that does not resolve gives nothing, and the last-resort address
// is never a loopback one.
#include <QtTest/QtTest>

#include <arpa/inet.h>

#include "rpc/listen_address.h"

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

  void testTheLastResortIsAnExternalIpv4() {
    const std::string a = first_external_ipv4();
    if (a.empty()) QSKIP("this host has no IPv4 address but loopback");
    in_addr address{};
    QVERIFY2(inet_pton(AF_INET, a.c_str(), &address) == 1, a.c_str());
    QVERIFY2((ntohl(address.s_addr) >> 24) != 127, a.c_str());
  }
};

QTEST_GUILESS_MAIN(TestListenAddress)
#include "tst_listen_address.moc"
