// The ranks' lines put back together from mpirun's tagged stream: mpirun cuts a rank's
// output into chunks of 4 KiB, each starting with its tag, and another rank's chunk can
// land mid-line. The real cut is made here by mpirun itself (testMpirunsOwnCutsAreJoined).
#include <QtTest/QtTest>

#include <cstdio>
#include <string>
#include <vector>

#include "rank_lines.h"
#include "test_registry.h"

using ddpscope::apps::RankLines;

class TestRankLines : public QObject {
  Q_OBJECT

  std::vector<std::string> out_;
  RankLines lines(const char* stream = "stdout") {
    return RankLines(stream, [this](const std::string& line) { out_.push_back(line); });
  }

 private slots:
  void init() { out_.clear(); }

  void testWholeLinesLoseOnlyTheirTag() {
    auto joiner = lines();
    joiner.line("[1,0]<stdout>:rank 0 says 1");
    joiner.line("[1,1]<stdout>:");
    joiner.line("[12,3]<stdout>:[not a tag] x");
    QCOMPARE(out_, (std::vector<std::string>{"rank 0 says 1", "", "[not a tag] x"}));
  }

  void testAPieceCutShortWaitsForItsRank() {
    auto joiner = lines();
    // Rank 1's chunk ended after "rank 1"; rank 0's whole line came in between.
    joiner.line("[1,1]<stdout>:rank 1[1,0]<stdout>:rank 0 says 1002 in 7 pieces");
    joiner.line("[1,1]<stdout>: says 1001 in 7 pieces");
    QCOMPARE(out_, (std::vector<std::string>{"rank 0 says 1002 in 7 pieces", "rank 1 says 1001 in 7 pieces"}));
  }

  void testBothRanksCutAtOnce() {
    auto joiner = lines();
    joiner.line("[1,0]<stdout>:a0 [1,1]<stdout>:a1 [1,0]<stdout>:b0");
    joiner.line("[1,1]<stdout>:b1");
    QCOMPARE(out_, (std::vector<std::string>{"a0 b0", "a1 b1"}));
  }

  void testMpirunsOwnWordsPassThrough() {
    auto joiner = lines("stderr");
    joiner.line("--------------------------------------------------------------------------");
    joiner.line("[1,0]<stdout>:on the wrong stream stays as it was");
    joiner.line("[1,0]<stderr>:*** An error occurred in MPI_Allreduce");
    QCOMPARE(out_, (std::vector<std::string>{
                       "--------------------------------------------------------------------------",
                       "[1,0]<stdout>:on the wrong stream stays as it was", "*** An error occurred in MPI_Allreduce"}));
  }

  void testLastWordsWithoutANewlineAreKept() {
    auto joiner = lines();
    joiner.line("[1,0]<stdout>:done[1,1]<stdout>:whole");
    QCOMPARE(out_, (std::vector<std::string>{"whole"}));
    joiner.flush();
    QCOMPARE(out_, (std::vector<std::string>{"whole", "done"}));
    joiner.flush();
    QCOMPARE(out_.size(), size_t{2});
  }

  void testMpirunsOwnCutsAreJoined() {
    // Two ranks each print lines of 10,000 characters: mpirun reads and tags them in chunks
    // of at most 4 KiB, so every line arrives in pieces, and the ranks' pieces mix.
    QString mpirun = QStandardPaths::findExecutable("mpirun");
    if (mpirun.isEmpty()) QSKIP("mpirun is not installed");
    QStringList args;
    if (geteuid() == 0) args << "--allow-run-as-root";
    args << "--oversubscribe"
         << "--tag-output"
         << "-np"
         << "2"
         << "sh"
         << "-c"
         << "for i in 1 2 3 4 5; do head -c 10000 /dev/zero | tr '\\0' \"$OMPI_COMM_WORLD_RANK\"; echo; done";
    QProcess job;
    job.start(mpirun, args);
    QVERIFY(job.waitForFinished(60000));
    QCOMPARE(job.exitCode(), 0);
    const QList<QByteArray> merged = job.readAllStandardOutput().split('\n');
    int cut = 0;  // merged lines holding more than one tag: mpirun really cut them
    auto joiner = lines();
    for (const QByteArray& line : merged) {
      if (line.isEmpty()) continue;
      cut += line.count("]<stdout>:") > 1;
      joiner.line(line.toStdString());
    }
    joiner.flush();
    QVERIFY2(cut > 0, "mpirun cut no line: the test shows nothing");
    QCOMPARE(out_.size(), size_t{10});
    for (const std::string& line : out_)
      QVERIFY2(line == std::string(10000, '0') || line == std::string(10000, '1'), line.substr(0, 80).c_str());
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRankLines)
#include "tst_rank_lines.moc"
