// RunFileClaim: the job that records into a run file holds this claim for its whole
// life. It guarantees two things users rely on:
//  - a new run starts from an empty file: an existing run is replaced only when the user
//    says so (--force, as Nsight Systems' --force-overwrite), never appended to;
//  - one file, one job: a second job given the same file is refused at start, with the
//    job that holds it named (its pid and command line).
//
// The claim is an flock(2) on the run file itself. SQLite locks with fcntl(2) byte
// ranges, which on Linux never conflict with flock, so the writer (in this process or
// in the collector it starts) works under the claim unchanged. The kernel drops the
// lock when the holder exits, however it exits: a killed job leaves no stale claim.
#pragma once

#include <memory>
#include <string>

namespace ddpscope::probes {

class RunFileClaim {
 public:
  // Claims `path` for a new run. Throws RunStoreError, and leaves the file as it was,
  // when another job holds it, when it holds a run and `replace` is false, or when it is
  // not a run file at all (not even `replace` overwrites a file ddpscope did not write).
  // With `replace`, an existing run (and its -wal and -shm) is emptied.
  RunFileClaim(const std::string& path, bool replace);
  ~RunFileClaim();
  RunFileClaim(const RunFileClaim&) = delete;
  RunFileClaim& operator=(const RunFileClaim&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Claims `out`, or with `out` empty a new file in the workspace folder (new_run_path),
// taking the next free name if another job starting in the same second took one first.
std::unique_ptr<RunFileClaim> claim_run_file(const std::string& out, bool replace);

// The process holding an flock on `path` (the job recording into it), read from
// /proc/locks; 0 when none is found.
long lock_holder_pid(const std::string& path);
// Its command line, "ddpscope-cli train --np 2 ...", from /proc (empty when gone).
std::string command_line_of(long pid);
// "pid 1234: ddpscope-cli train --np 2 ..." for the holder; empty when none is found.
std::string describe_lock_holder(const std::string& path);

// Asks the job recording the run in `path` for every rank's stack now: SIGUSR2 to its
// launcher, which passes the ask on to the ranks (`hang --ask`, the Hang tab). Throws
// RunStoreError, saying why and what to do, when no ddpscope launcher on this host holds it.
void ask_run_holder_for_stacks(const std::string& path);

}  // namespace ddpscope::probes
