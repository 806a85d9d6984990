// The events' vocabulary: every kind has a name of its own, the detail kinds (the many
// short spans inside a step) are told apart from the structure, and RPC message kinds
// have names the run file and the app share.
#include <QtTest/QtTest>

#include <set>
#include <string>

#include "event.h"
#include "test_registry.h"

using namespace ddpscope::probes;

class TestEvent : public QObject {
  Q_OBJECT

 private slots:
  void testEveryKindHasANameOfItsOwn() {
    std::set<std::string> names;
    for (int k = 0; k < kNumKinds; ++k) {
      const std::string name = kind_name(static_cast<Kind>(k));
      QVERIFY2(!name.empty() && name != "?", qPrintable(QString::number(k)));
      names.insert(name);
    }
    QCOMPARE(names.size(), size_t(kNumKinds));
  }

  void testDetailKindsAreToldApart() {
    QVERIFY(!is_detail_kind(static_cast<uint8_t>(Kind::Iteration)));
    QVERIFY(!is_detail_kind(static_cast<uint8_t>(Kind::Allreduce)));
    QVERIFY(is_detail_kind(static_cast<uint8_t>(Kind::GradReady)));
    int detail = 0;
    for (int k = 0; k < kNumKinds; ++k)
      detail += is_detail_kind(static_cast<uint8_t>(k));
    QVERIFY(detail > 0 && detail < kNumKinds);
  }

  void testRpcMessageKinds() {
    QCOMPARE(std::string(rpc_message_kind_name(1)), std::string("call"));
    QCOMPARE(std::string(rpc_message_kind_name(2)), std::string("response"));
    QCOMPARE(std::string(rpc_message_kind_name(3)), std::string("error"));
    QCOMPARE(std::string(rpc_message_kind_name(0)), std::string("unknown"));
    QCOMPARE(std::string(rpc_message_kind_name(42)), std::string("unknown"));
    QCOMPARE(std::string(kind_name(static_cast<Kind>(200))), std::string("unknown"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestEvent)
#include "tst_event.moc"
