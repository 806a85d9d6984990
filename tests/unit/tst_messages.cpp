// Distributed autograd's messages: each survives its encoding, and a message of the
// wrong shape is refused with an error that names the message and the part.
#include <QtTest/QtTest>

#include "dist_autograd/messages.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::dist_autograd;

class TestMessages : public QObject {
  Q_OBJECT

  template <typename Fn>
  static QString error_of(Fn fn) {
    try {
      fn();
    } catch (const Error& e) {
      return QString::fromStdString(e.message());
    }
    return {};
  }

 private slots:
  void testGradientsRoundTrip() {
    GradientsMessage m{7, 11, 13, true, {Tensor::ones({2, 3}), Tensor()}};
    const GradientsMessage back = GradientsMessage::decode(GradientsMessage(m).encode());
    QCOMPARE(back.ctx_id, int64_t{7});
    QCOMPARE(back.send_id, int64_t{11});
    QCOMPARE(back.pass, int64_t{13});
    QCOMPARE(back.retain_graph, true);
    QCOMPARE(back.grads.size(), size_t{2});
    QCOMPARE(back.grads[0].sizes(), (std::vector<int64_t>{2, 3}));
    QVERIFY(!back.grads[1].defined());  // none stays none
  }

  void testControlMessagesRoundTrip() {
    const ActivateMessage a = ActivateMessage::decode(ActivateMessage{1, 2, {5, 6, 7}}.encode());
    QCOMPARE(a.ctx_id, int64_t{1});
    QCOMPARE(a.pass, int64_t{2});
    QCOMPARE(a.send_ids, (std::vector<int64_t>{5, 6, 7}));
    const AbandonMessage b = AbandonMessage::decode(AbandonMessage{3, 4, 2}.encode());
    QCOMPARE(b.ctx_id, int64_t{3});
    QCOMPARE(b.pass, int64_t{4});
    QCOMPARE(b.sender, 2);
    const ReleaseMessage r = ReleaseMessage::decode(ReleaseMessage{9, 1}.encode());
    QCOMPARE(r.ctx_id, int64_t{9});
    QCOMPARE(r.sender, 1);
  }

  void testWrongShapesAreRefusedByName() {
    QCOMPARE(error_of([] { GradientsMessage::decode({rpc::Value(int64_t{1})}); }),
             QString("distributed autograd: a gradients message has 1 parts, not 5"));
    rpc::ValueList bad = GradientsMessage{1, 2, 3, false, {}}.encode();
    bad[3] = rpc::Value("yes");
    QCOMPARE(error_of([&] { GradientsMessage::decode(bad); }),
             QString("distributed autograd: part 3 (retain_graph) of a gradients message is not a boolean"));
    bad = GradientsMessage{1, 2, 3, false, {}}.encode();
    bad[4] = rpc::Value(rpc::ValueList{rpc::Value("grad")});
    QVERIFY(error_of([&] { GradientsMessage::decode(bad); }).contains("neither a tensor nor none"));
    QCOMPARE(error_of([] {
               ReleaseMessage::decode({rpc::Value("ctx"), rpc::Value(int64_t{0})});
             }),
             QString("distributed autograd: part 0 (context id) of a release message is not an integer"));
    QVERIFY(error_of([] {
              ActivateMessage::decode(
                  {rpc::Value(int64_t{1}), rpc::Value(int64_t{2}), rpc::Value(rpc::ValueList{rpc::Value(1.5)})});
            }).contains("a send function of an activate message is not an integer"));
    QVERIFY(error_of([] { AbandonMessage::decode({}); }).contains("an abandon message has 0 parts, not 3"));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestMessages)
#include "tst_messages.moc"
