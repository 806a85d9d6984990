// Collectives in words for the flight verdicts: lists of ranks as a reader says them,
// shapes and tensors, where a call came from (ddpscope's phase and iteration, or the
// innermost frame of the user's code in PyTorch's stack), and what no writer writes.
#include <QtTest/QtTest>

#include "flight_words.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::flight_words;

class TestFlightWords : public QObject {
  Q_OBJECT

 private slots:
  void testRanksAsAReaderSaysThem() {
    QCOMPARE(list_text({3}), std::string("3"));
    QCOMPARE(list_text({0, 1, 3}), std::string("0, 1 and 3"));
    QCOMPARE(ranks_text({2}), std::string("Rank 2"));
    QCOMPARE(ranks_text({0, 1}), std::string("Ranks 0 and 1"));
    QCOMPARE(lower_ranks({4, 5}), std::string("ranks 4 and 5"));
  }

  void testShapesAndTensors() {
    QCOMPARE(shape_text({1024}), std::string("[1024]"));
    QCOMPARE(shape_text({2, 3}), std::string("[2, 3]"));
    QCOMPARE(tensors_text({{1024}}, {"Float"}), std::string("Float[1024]"));
    QCOMPARE(tensors_text({{8}, {8}, {8}}, {"f32"}), std::string("3 x f32[8]"));
    QCOMPARE(tensors_text({{8}, {4}}, {"f32"}), std::string("2 tensors, f32[8] first"));
    QCOMPARE(tensors_text({}, {}), std::string());
  }

  void testWhereACallCameFrom() {
    CollectiveRow ours;
    ours.phase = "loss allreduce";
    ours.iteration = 3;
    QCOMPARE(from_text(ours), std::string(" in loss allreduce of iteration 3"));
    CollectiveRow torch;
    torch.frames = {{"all_reduce", "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 2501},
                    {"forward", "train.py", 42},
                    {"main", "train.py", 80}};
    QCOMPARE(origin_text(torch), std::string("forward at train.py:42"));  // the user's innermost frame
    CollectiveRow nothing;
    QCOMPARE(from_text(nothing), std::string());
  }

  void testWhatNoWriterWrites() {
    QVERIFY(known_dtype("Float") && known_dtype("BFloat16") && known_dtype("f32"));
    QVERIFY(!known_dtype("Flaot"));
    QVERIFY(known_op("all_reduce") && known_op("send"));
    QVERIFY(!known_op("all_reduse"));
    CollectiveRow r;
    r.op = "all_reduse";
    r.input_dtypes = {"Flaot"};
    r.state = "completed";
    QCOMPARE(unknown_text(r), std::string("op \"all_reduse\", dtype \"Flaot\""));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestFlightWords)
#include "tst_flight_words.moc"
