// ddpscope-worker's counting operator new (linked into this test as into the worker):
// every operator new and new[] counts one allocation, deletes count none, and a request
// of zero bytes still gets memory of its own.
#include <QtTest/QtTest>

#include <memory>
#include <vector>

#include "apps/allocation_counter.h"

using ddpscope::apps::allocations;

class TestCountingOperatorNew : public QObject {
  Q_OBJECT

 private slots:
  void testEachNewCountsOne() {
    const uint64_t before = allocations();
    // Called as functions: new-expressions whose memory is unused may be optimised away.
    void* one = ::operator new(sizeof(int));
    void* many = ::operator new[](64 * sizeof(int));
    const uint64_t after_new = allocations();
    ::operator delete(one);
    ::operator delete[](many);
    QCOMPARE(after_new - before, uint64_t{2});
    QCOMPARE(allocations(), after_new);  // deletes count nothing
    std::vector<double> v;
    v.reserve(1000);  // the standard library's allocations are counted too
    QCOMPARE(allocations(), after_new + 1);
  }

  void testZeroBytesGetMemoryOfTheirOwn() {
    void* a = ::operator new(0);
    void* b = ::operator new(0);
    QVERIFY(a && b && a != b);
    ::operator delete(a);
    ::operator delete(b);
  }
};

QTEST_GUILESS_MAIN(TestCountingOperatorNew)
#include "tst_counting_operator_new.moc"
