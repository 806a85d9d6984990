#include "disk_reserve.h"

#include <fcntl.h>
#include <unistd.h>

namespace ddpscope::probes {

DiskReserve::DiskReserve(std::string path, int64_t bytes) : path_(std::move(path)) {
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // posix_fallocate really takes the blocks (a sparse file would free nothing later).
  held_ = ::posix_fallocate(fd, 0, bytes) == 0;
  ::close(fd);
  if (!held_) ::unlink(path_.c_str());
}

DiskReserve::~DiskReserve() { release(); }

void DiskReserve::release() {
  if (!held_) return;
  ::unlink(path_.c_str());
  held_ = false;
}

}  // namespace ddpscope::probes
