#include "atomic_file.h"

#include <filesystem>

#include "ddpscope/error.h"

namespace fs = std::filesystem;

namespace ddpscope::probes {

AtomicFile::AtomicFile(std::string path, const char* suffix) : path_(std::move(path)), partial_(path_ + suffix) {
  remove_partial(true);
}

AtomicFile::~AtomicFile() {
  if (!committed_) remove_partial(true);
}

void AtomicFile::remove_partial(bool file_too) const {
  std::error_code ec;
  for (const char* sidecar : {"-wal", "-shm", "-journal"})
    fs::remove(partial_ + sidecar, ec);
  if (file_too) fs::remove(partial_, ec);
}

void AtomicFile::commit() {
  remove_partial(false);
  std::error_code ec;
  fs::rename(partial_, path_, ec);
  if (ec) {
    remove_partial(true);
    throw DDPSCOPE_ERROR("cannot move the finished file into place at '", path_, "': ", ec.message(),
                         "; check that the folder is writable and the name is not a folder");
  }
  committed_ = true;
}

}  // namespace ddpscope::probes
