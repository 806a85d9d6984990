// What mpirun's own stderr says about a failed job, when no rank could report it: Open
// MPI's report of a fatal error in an MPI call, and its line naming a rank that died.
#pragma once

#include <deque>
#include <string>
#include <utility>

namespace ddpscope::apps {

// Open MPI's report of a fatal error in an MPI call (MPI_ERRORS_ARE_FATAL):
//   *** An error occurred in MPI_Allreduce
//   *** reported by process [579076097,0]
//   *** MPI_ERR_TRUNCATE: message truncated
// as {0, "MPI_Allreduce failed on rank 0: MPI_ERR_TRUNCATE: message truncated ..."};
// {-1, ""} when the lines are not there.
std::pair<int, std::string> mpi_fatal_error(const std::deque<std::string>& lines);

// The first line naming a rank mpirun saw die ("process rank 0 ... exited on signal 9")
// as {rank, line}; {-1, ""} when there is none.
std::pair<int, std::string> rank_death(const std::deque<std::string>& lines);

}  // namespace ddpscope::apps
