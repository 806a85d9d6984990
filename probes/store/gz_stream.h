// GzStream: a file read through zlib's gzread, so a plain file and a `.gz` read the same
// way, a megabyte at a time whatever the file's size. It is a RapidJSON input stream
// (Peek/Take/Tell) and a byte source (read) for the pickle reader.
//
//   GzStream in("rank0.json", "trace file");   // errors say "... is not a trace file"
//
// Only regular files are opened: a FIFO or a device would never end (or block before the
// first byte). Errors are TraceFileError naming the file and, for damage, the byte.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ddpscope/error.h"

namespace ddpscope::probes {

// A file a reader of foreign formats (traces, dumps) cannot read: it names the file and,
// for damage, the byte.
class TraceFileError : public Error {
 public:
  using Error::Error;
};

class GzStream {
 public:
  using Ch = char;
  // noun: what the file should be, for errors ("trace file", "flight-recorder dump").
  // progress: called after each megabyte with the fraction read; false cancels.
  GzStream(const std::string& path, const std::string& noun, std::function<bool(double)> progress = {});
  ~GzStream();
  GzStream(const GzStream&) = delete;
  GzStream& operator=(const GzStream&) = delete;

  // A gzipped file that inflates past `ratio` times its size (and past 64 MiB) is refused
  // as a gzip bomb: memory follows what is read, and a 10 MB file must not become 10 GB.
  // Every reader has the limit (kMaxInflation: PyTorch's traces inflate 13 to 19 times,
  // its JSON flight dumps about 15); 0 lifts it.
  static constexpr int kMaxInflation = 64;
  void limit_inflation(int ratio) { max_ratio_ = ratio; }

  char Peek() const { return pos_ < end_ ? buffer_[pos_] : '\0'; }
  char Take() {
    if (pos_ >= end_) return '\0';
    const char c = buffer_[pos_++];
    if (pos_ == end_) fill();
    return c;
  }
  size_t Tell() const { return consumed_ + pos_; }
  bool at_end() const { return pos_ >= end_; }
  // Copies n bytes into out; false (and nothing promised about out) when the file ends first.
  bool read(char* out, size_t n);
  int64_t file_size() const { return file_size_; }
  const std::string& path() const { return path_; }
  // Unused by the reader (input only).
  char* PutBegin() { return nullptr; }
  void Put(char) {}
  void Flush() {}
  size_t PutEnd(char*) { return 0; }

 private:
  static constexpr size_t kChunk = 1 << 20;
  void fill();
  std::string path_, noun_;
  std::function<bool(double)> progress_;
  gzFile file_ = nullptr;
  std::unique_ptr<char[]> buffer_;
  size_t pos_ = 0, end_ = 0, consumed_ = 0;
  int64_t file_size_ = 0;
  int max_ratio_ = kMaxInflation;  // 0: no limit
};

}  // namespace ddpscope::probes
