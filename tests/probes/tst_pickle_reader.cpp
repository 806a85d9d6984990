// The pickle reader on hostile input: pickles that ask for code, that are damaged or
// truncated, too deep, or refer back to what was streamed and forgotten are refused with
// what was wrong.
#include <QtTest/QtTest>

#include "flight_dump_sets.h"
#include "test_registry.h"

using namespace ddpscope::probes;
using namespace ddpscope::probes::flight_dump_sets;

class TestPickleReader : public ScratchTest {
  Q_OBJECT

 private slots:
  // Pickles that ask for code, or that are damaged or deep, are refused with what was wrong.
  void testHostilePicklesAreRefused_data() {
    QTest::addColumn<QString>("code");
    QTest::addColumn<QString>("words");
    QTest::newRow("global") << "import os, pickle; sys_out(pickle.dumps(os.system, protocol=2))"
                            << "GLOBAL";
    QTest::newRow("stack global") << "import os, pickle; sys_out(pickle.dumps(os.system, protocol=5))"
                                  << "STACK_GLOBAL";
    QTest::newRow("reduce") << "import pickle\nclass E:\n  def __reduce__(self): return (print, ('hi',))\n"
                               "sys_out(pickle.dumps({'entries': [E()]}, protocol=2))"
                            << "the pickle asks for";
    QTest::newRow("instance") << "import pickle, collections\nsys_out(pickle.dumps(collections.OrderedDict(a=1), "
                                 "protocol=2))"
                              << "the pickle asks for";
    QTest::newRow("set") << "import pickle; sys_out(pickle.dumps({'entries': {1, 2}}, protocol=4))"
                         << "a set";
    QTest::newRow("truncated") << "import pickle; sys_out(pickle.dumps({'version': '2.10', 'entries': [{'a': 1}] * "
                                  "50}, protocol=2)[:-30])"
                               << "truncated";
    QTest::newRow("deep") << "import pickle\nx = []\nfor _ in range(400): x = [x]\n"
                             "sys_out(pickle.dumps({'version': '2.10', 'entries': x}, protocol=2))"
                          << "deeper than";
    QTest::newRow("huge string") << "sys_out(b'\\x80\\x02X\\xff\\xff\\xff\\x7fabc')"
                                 << "past the end of the file";
    // The same entry again after Python's batch of 1,000 appends: it was streamed and
    // forgotten, so the reference back is refused (within a batch it is simply read twice).
    QTest::newRow("an entry referenced again")
        << "import pickle\n"
           "es = [{'profiling_name': 'nccl:all_reduce', 'collective_seq_id': i} "
           "for i in range(1001)]\nes.append(es[0])\n"
           "sys_out(pickle.dumps({'version': '2.10', 'entries': es}, protocol=2))"
        << "refers back to an item";
    // Issue 49: memory follows what a dump expands to. A pickle's shared references are
    // replayed once per use: 2,000 entries sharing one list of 5,000 frames are 10^7
    // frames from 300 KB. A gzip of the same entry a million times, likewise.
    QTest::newRow("shared references")
        << "import pickle\nfr = [{'name': 'f' * 100, 'filename': 'g' * 100, 'line': 1}] * 5000\n"
           "es = [{'profiling_name': 'nccl:all_reduce', 'collective_seq_id': i, 'frames': fr} for i in range(2000)]\n"
           "sys_out(pickle.dumps({'version': '2.10', 'entries': es}, protocol=4))"
        << "expands to more than";
    QTest::newRow("gzip")
        << "import gzip\ne = b'{\"profiling_name\":\"nccl:all_reduce\",\"collective_seq_id\":1,\"frames\":[]},'\n"
           "sys_out(gzip.compress(b'{\"version\":\"2.10\",\"entries\":[' + e * 1000000 + b'{}]}'))"
        << "expands to more than";
    // RapidJSON recurses a level per bracket: 100,000 of them in 310 bytes of gzip.
    QTest::newRow("deep JSON")
        << "import gzip\nsys_out(gzip.compress(b'{\"version\":\"2.4\",\"pg_config\":{},\"junk\":' + b'[' * 100000 + "
           "b']' * 100000 + b'}'))"
        << "nests deeper than 200 levels";
    QTest::newRow("big int") << "import pickle; sys_out(pickle.dumps({'version': '2.10', 'entries': [{'record_id': "
                                "2**80}]}, protocol=2))"
                             << "wider than 64 bits";
  }

  void testHostilePicklesAreRefused() {
    QFETCH(QString, code);
    QFETCH(QString, words);
    const QString file = scratch_file("hostile_rank_0");
    QProcess p;
    p.start("/usr/bin/python3", {"-c", "import sys\ndef sys_out(b): open(sys.argv[1], 'wb').write(b)\n" + code, file});
    QVERIFY(p.waitForFinished(30000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    try {
      read_flight_dump(file.toStdString());
      QFAIL("a hostile pickle was read");
    } catch (const RunStoreError& e) {
      QVERIFY2(QString(e.what()).contains(words) && QString(e.what()).contains("hostile_rank_0"), e.what());
    }
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestPickleReader)
#include "tst_pickle_reader.moc"
