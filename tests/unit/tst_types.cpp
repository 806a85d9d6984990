// The communication layer's value types: reduce ops and op kinds by name (as errors and
// the run file say them), a group's options from the environment (timeout, consistency
// checks; a malformed timeout refused), and timeout messages the fault suite can garble.
#include <QtTest/QtTest>

#include <set>

#include "c10d/types.h"
#include "ddpscope/error.h"
#include "test_registry.h"

using namespace ddpscope::c10d;

class TestTypes : public QObject {
  Q_OBJECT

 private slots:
  void testNames() {
    QCOMPARE(std::string(reduce_op_name(ReduceOp::Avg)), std::string("avg"));
    QCOMPARE(std::string(reduce_op_name(ReduceOp::Product)), std::string("product"));
    std::set<std::string> ops;
    for (int k = 0; k <= static_cast<int>(OpType::NewGroup); ++k)
      ops.insert(op_type_name(static_cast<OpType>(k)));
    QCOMPARE(ops.size(), size_t(static_cast<int>(OpType::NewGroup) + 1));  // each its own
    QCOMPARE(std::string(op_type_name(OpType::Allreduce)), std::string("allreduce"));
  }

  void testGroupOptionsFromTheEnvironment() {
    qunsetenv("DDPSCOPE_PG_TIMEOUT_MS");
    qunsetenv("DDPSCOPE_DEBUG");
    const ProcessGroupOptions plain = ProcessGroupOptions::from_environment();
    QCOMPARE(plain.timeout, Milliseconds(30 * 60 * 1000));
    QVERIFY(!plain.check_consistency);
    qputenv("DDPSCOPE_PG_TIMEOUT_MS", "1500");
    qputenv("DDPSCOPE_DEBUG", "detail");
    const ProcessGroupOptions set = ProcessGroupOptions::from_environment();
    QCOMPARE(set.timeout, Milliseconds(1500));
    QVERIFY(set.check_consistency);
    qputenv("DDPSCOPE_PG_TIMEOUT_MS", "5s");
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, ProcessGroupOptions::from_environment());
    qunsetenv("DDPSCOPE_PG_TIMEOUT_MS");
    qunsetenv("DDPSCOPE_DEBUG");
  }

  void testTimeoutMessages() {
    qunsetenv("DDPSCOPE_TEST_GARBLE_TIMEOUTS");
    QCOMPARE(timeout_message("allreduce #3 timed out on rank 1"), std::string("allreduce #3 timed out on rank 1"));
    qputenv("DDPSCOPE_TEST_GARBLE_TIMEOUTS", "1");
    const std::string garbled = timeout_message("allreduce #3 timed out on rank 1");
    QVERIFY(garbled.find("allreduce") == std::string::npos && garbled.find('3') == std::string::npos);
    qunsetenv("DDPSCOPE_TEST_GARBLE_TIMEOUTS");
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestTypes)
#include "tst_types.moc"
