// mpirun's words read: its report of a rank that died names the rank, in our words.
#include <QtTest/QtTest>

#include "process_fixture.h"
#include "test_registry.h"

using namespace ddpscope::apps;
using namespace std::chrono_literals;
using namespace ddpscope::testing::process_fixture;

class TestMpirunMessages : public ProcessTest {
  Q_OBJECT

 private slots:

  void testMpirunsWordsNameTheRank() {
    const std::deque<std::string> fatal = {"noise", "*** An error occurred in MPI_Allreduce",
                                           "*** reported by process [579076097,1]",
                                           "*** MPI_ERR_TRUNCATE: message truncated"};
    const auto [rank, text] = mpi_fatal_error(fatal);
    QCOMPARE(rank, 1);
    QVERIFY2(text.rfind("MPI_Allreduce failed on rank 1: MPI_ERR_TRUNCATE", 0) == 0 &&
                 text.find("DDPSCOPE_DEBUG=detail") != std::string::npos,
             text.c_str());
    QCOMPARE(mpi_fatal_error({"*** An error occurred in MPI_Allreduce"}).first, -1);  // no rank: no verdict
    const auto [dead, line] =
        rank_death({"x", "mpirun noticed that process rank 3 with PID 7 exited on signal 9", "y"});
    QCOMPARE(dead, 3);
    QVERIFY(line.find("signal 9") != std::string::npos);
    QCOMPARE(rank_death({"nothing here"}).first, -1);
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestMpirunMessages)
#include "tst_mpirun_messages.moc"
