// The MPI runtime as ddpscope uses it, under mpirun (2 and 4 ranks): one initialisation
// with the world as mpirun set it, our dtypes' datatypes (f16 and bf16 as 2 bytes), an
// MPI error in our words (a truncated message says what usually causes it and what to
// do), a failed call thrown naming the call and the rank, and communicators freed by
// their owner.
#include <QtTest/QtTest>

#include <cstdlib>

#include "c10d/mpi_environment.h"
#include "ddpscope/error.h"
#include "mpi_test_main.h"

using namespace ddpscope;
using namespace ddpscope::c10d;

class TestMpiEnvironment : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { MpiEnvironment::ensure_initialized(); }

  void testTheWorldAsMpirunSetIt() {
    MpiEnvironment::ensure_initialized();  // again: nothing happens
    const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    QVERIFY(size && rank);
    QCOMPARE(MpiEnvironment::world_size(), std::atoi(size));
    QCOMPARE(MpiEnvironment::world_rank(), std::atoi(rank));
    QVERIFY2(MpiEnvironment::library_version().find("Open MPI") != std::string::npos,
             MpiEnvironment::library_version().c_str());
  }

  void testOurDtypesHaveDatatypes() {
    for (auto [dtype, bytes] :
         {std::pair{DType::F32, 4}, {DType::F64, 8}, {DType::F16, 2}, {DType::BF16, 2}, {DType::I64, 8}}) {
      int size = 0;
      MPI_Type_size(mpi_datatype(dtype), &size);
      QCOMPARE(size, bytes);
    }
  }

  void testErrorsInOurWords() {
    const std::string truncated = describe_mpi_error(MPI_ERR_TRUNCATE, "MPI_Allreduce", 1);
    QVERIFY2(truncated.rfind("MPI_Allreduce failed on rank 1: ", 0) == 0, truncated.c_str());
    QVERIFY2(truncated.find("DDPSCOPE_DEBUG=detail") != std::string::npos, truncated.c_str());
    try {
      // A count below zero: MPI returns an error (MPI_ERRORS_RETURN), which is thrown.
      float x = 0;
      MPI_CHECK(MPI_Bcast(&x, -1, MPI_FLOAT, 0, MPI_COMM_WORLD));
      QFAIL("a failed MPI call returned");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("MPI_Bcast") &&
                   QString(e.what()).contains(QString("on rank %1").arg(MpiEnvironment::world_rank())),
               e.what());
    }
  }

  void testCommunicatorsAreFreedByTheirOwner() {
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MpiComm owner(dup);
    MpiComm moved(std::move(owner));
    QCOMPARE(owner.get(), MPI_COMM_NULL);
    QVERIFY(moved.get() != MPI_COMM_NULL);
    int size = 0;
    MPI_Comm_size(moved.get(), &size);
    QCOMPARE(size, MpiEnvironment::world_size());
  }
};

DDPSCOPE_MPI_TEST_MAIN(TestMpiEnvironment)
#include "tst_mpi_environment.moc"
