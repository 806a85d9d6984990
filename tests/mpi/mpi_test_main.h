// The registration of Qt Test cases that run inside every rank of an mpirun job: rank 0 reports
// in full, other ranks only their failures, and the exit code is non-zero when any
// check failed on this rank (mpirun then fails the whole job).
#pragma once

#include <QtTest/QtTest>

#include <memory>

#include "c10d/mpi_environment.h"
#include "c10d/process_group.h"
#include "test_registry.h"

// Joins MPI before the application object is made; ranks other than 0 report only failures.
inline void ddpscope_mpi_test_setup(QStringList& extra_args) {
  ddpscope::c10d::MpiEnvironment::ensure_initialized();
  if (ddpscope::c10d::MpiEnvironment::world_rank() != 0) extra_args << "-silent";
}

#define DDPSCOPE_MPI_TEST_MAIN(TestClass) \
  DDPSCOPE_REGISTER_TEST(TestClass, ::ddpscope_tests::AppKind::Core, ddpscope_mpi_test_setup)

// The base of test classes whose cases run on every rank: joins the job's process group
// (in initTestCase) and keeps this rank and the world size.
class WorldTest : public QObject {
 protected:
  int rank_ = 0;
  int size_ = 1;
  void join_world(std::shared_ptr<ddpscope::c10d::ProcessGroup>& world) {
    world = ddpscope::c10d::init_process_group();
    rank_ = world->rank();
    size_ = world->size();
  }
};
