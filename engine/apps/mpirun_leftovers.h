// What an OpenMPI job leaves on this host when its mpirun is killed before its own cleanup
// (the launcher's SIGKILL after a stop's grace, a second Ctrl-C): mpirun's session directory
// and the shared-memory segments of the job's ranks. Each such job left ~8 MB in the
// temporary directory and ~2 MB of RAM in /dev/shm per rank, for good: 73 directories and 90
// segments after a day of test runs here. OpenMPI 4 names them
//   <tmpdir>/ompi.<node>.<uid>/pid.<mpirun's pid>/   (its contact.txt starts "<family << 16>.0;")
//   /dev/shm/vader_segment.<node>.<uid>.<job id, hex>.<local rank>  (job id: family << 16 | n)
// where tmpdir is OMPI_MCA_orte_tmpdir_base, else TMPDIR, TEMP or TMP, else /tmp.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <string>
#include <vector>

namespace ddpscope::apps {

struct MpirunLeftovers {
  std::vector<std::string> removed;  // paths, segments first
  uintmax_t bytes = 0;               // their size on disk or in memory
};

// Removes the session directory of the mpirun that had `mpirun` as its pid, and the segments
// of its job family; nothing when that directory is gone (mpirun cleaned up) or names no
// family. Call only once that mpirun has ended. `shm` and `tmpdir` are for tests ("": the
// defaults above).
MpirunLeftovers remove_mpirun_leftovers(pid_t mpirun, const std::string& shm = "", const std::string& tmpdir = "");

// The directory OpenMPI puts its session directories in, as above.
std::string openmpi_tmpdir_base();

}  // namespace ddpscope::apps
