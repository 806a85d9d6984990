// Room kept on the run file's disk for the run's last words. A collector whose disk
// fills stops storing events, but must still record how the run ended (status, message,
// events lost); with the disk full that small write fails too and the file would say
// "running" forever. The reserve is a file beside the run (RUN-reserve), allocated at
// start and deleted when the disk fills, which frees room for the end record.
#pragma once

#include <cstdint>
#include <string>

namespace ddpscope::probes {

class DiskReserve {
 public:
  // Allocates `bytes` at `path`; a disk too full for it leaves no reserve (not an error:
  // the run goes on, and its end may then not be recorded).
  DiskReserve(std::string path, int64_t bytes);
  ~DiskReserve();
  DiskReserve(const DiskReserve&) = delete;
  DiskReserve& operator=(const DiskReserve&) = delete;

  bool held() const { return held_; }
  // Gives the room back to the disk (deletes the file).
  void release();

 private:
  std::string path_;
  bool held_ = false;
};

}  // namespace ddpscope::probes
