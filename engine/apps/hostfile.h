// An OpenMPI hostfile, read before a job starts: mpirun's own reports of a bad one are
// a page of ORTE internals ("FORCE-TERMINATE ... should be reported to the developers")
// after the run file was already made. Lines are `HOST [slots=N] [max_slots=N]`, with
// `#` comments and blank lines.
#pragma once

#include <string>
#include <vector>

namespace ddpscope::apps {

struct HostfileEntry {
  std::string host;
  int slots = -1;  // -1: not given (mpirun then counts the host's cores)
};

struct Hostfile {
  std::vector<HostfileEntry> hosts;
  // The slots of every line, or -1 when a line does not say.
  int total_slots() const;
};

// Throws ddpscope::Error naming the file, the line and what is wrong with it.
Hostfile read_hostfile(const std::string& path);

}  // namespace ddpscope::apps
