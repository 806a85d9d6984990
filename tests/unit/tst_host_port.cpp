// ddpscope/host_port.h: "HOST:PORT" read one way for the RPC transports' endpoints,
// `collect --listen` and the app's Join a class: hosts, IPv6 in brackets or alone, ports in
// range, and what is wrong with the rest.
#include <QtTest/QtTest>

#include "ddpscope/host_port.h"
#include "test_registry.h"

using ddpscope::HostPort;

class TestHostPort : public QObject {
  Q_OBJECT

  static std::pair<std::string, std::string> split(const char* text) {
    HostPort where;
    const std::string wrong = ddpscope::split_host_port(text, where);
    if (!wrong.empty()) return {"error", wrong};
    return {where.host, where.port};
  }

 private slots:
  void testHostsAndPorts() {
    using P = std::pair<std::string, std::string>;
    QCOMPARE(split("node1:29600"), (P{"node1", "29600"}));
    QCOMPARE(split("10.0.0.5"), (P{"10.0.0.5", ""}));
    QCOMPARE(split("[::1]:7000"), (P{"::1", "7000"}));
    QCOMPARE(split("[fe80::1]"), (P{"fe80::1", ""}));
    QCOMPARE(split("fe80::1"), (P{"fe80::1", ""}));  // an IPv6 address alone: no port in it
  }

  void testWhatIsWrongIsSaid() {
    using P = std::pair<std::string, std::string>;
    QCOMPARE(split(""), (P{"error", "it names no host"}));
    QCOMPARE(split(":29600"), (P{"error", "it names no host"}));
    QCOMPARE(split("node1:"), (P{"error", "no port after ':'"}));
    QCOMPARE(split("[::1"), (P{"error", "an IPv6 address needs its closing ']'"}));
    QCOMPARE(split("[::1]7000"), (P{"error", "expected ':PORT' after ']'"}));
    QCOMPARE(split("[::1]:"), (P{"error", "no port after ':'"}));
    QCOMPARE(split("[]:80"), (P{"error", "it names no host"}));
  }

  void testPortNumbers() {
    QCOMPARE(ddpscope::port_number("29600"), 29600);
    QCOMPARE(ddpscope::port_number("65535"), 65535);
    QCOMPARE(ddpscope::port_number("65535", 1, 65534), -1);  // collect uses the port and the next
    for (const char* bad : {"", "0", "-1", "port", "80x", " 80", "99999999999"})
      QVERIFY2(ddpscope::port_number(bad) == -1, bad);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestHostPort)
#include "tst_host_port.moc"
