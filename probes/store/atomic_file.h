// AtomicFile: a file written beside its final path and moved there once whole. Readers
// of the path see the old file or the whole new one, never half of one; a failure (an
// exception, a failed rename) leaves nothing behind: the partial file, and SQLite's
// sidecars of it when it is a run file, are removed unless commit() moved it into place.
// Used by every writer of a file a user names (imports, exports, lesson files).
#pragma once

#include <string>

namespace ddpscope::probes {

class AtomicFile {
 public:
  // `path`: where the file goes; the partial file is `path` + `suffix`. A partial file
  // left by an earlier crash is removed here.
  explicit AtomicFile(std::string path, const char* suffix = ".partial");
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& path() const { return path_; }
  // Where to write.
  const std::string& partial() const { return partial_; }
  // Moves the partial file to path() (its sidecars removed first: a run file is whole
  // once its WAL is folded). Throws, naming path(), when it cannot; the partial file is
  // removed then too.
  void commit();

 private:
  void remove_partial(bool file_too) const;

  std::string path_, partial_;
  bool committed_ = false;
};

}  // namespace ddpscope::probes
