#include "gz_stream.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

namespace ddpscope::probes {

#define STREAM_ERROR(...) TraceFileError(detail::concat(__VA_ARGS__), __FILE__, __LINE__)

GzStream::GzStream(const std::string& path, const std::string& noun, std::function<bool(double)> progress)
    : path_(path), noun_(noun), progress_(std::move(progress)) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw STREAM_ERROR("'", path, "': no such file");
  if (S_ISDIR(st.st_mode)) throw STREAM_ERROR("'", path, "' is a folder, not a ", noun);
  if (!S_ISREG(st.st_mode))
    throw STREAM_ERROR("'", path, "' is not a regular file (a pipe, socket or device never ends): not a ", noun,
                       "; copy it to a file first");
  file_size_ = st.st_size;
  file_ = gzopen(path.c_str(), "rb");
  if (!file_) throw STREAM_ERROR("cannot open '", path, "' for reading");
  gzbuffer(file_, 1 << 18);
  buffer_.reset(new char[kChunk]);
  fill();
}

GzStream::~GzStream() {
  if (file_) gzclose(file_);
}

bool GzStream::read(char* out, size_t n) {
  while (n > 0) {
    if (pos_ >= end_) return false;
    const size_t take = std::min(n, end_ - pos_);
    std::memcpy(out, buffer_.get() + pos_, take);
    out += take, n -= take, pos_ += take;
    if (pos_ == end_) fill();
  }
  return true;
}

void GzStream::fill() {
  consumed_ += end_;
  pos_ = end_ = 0;
  const int n = gzread(file_, buffer_.get(), kChunk);
  if (n < 0) {
    int code = 0;
    const char* why = gzerror(file_, &code);
    throw STREAM_ERROR("'", path_, "' is damaged: its compressed data cannot be read at byte ", consumed_, " (", why,
                       ")");
  }
  end_ = static_cast<size_t>(n);
  if (max_ratio_ > 0 && !gzdirect(file_)) {
    const int64_t inflated = static_cast<int64_t>(consumed_ + end_);
    if (inflated > std::max<int64_t>(int64_t{64} << 20, max_ratio_ * std::max<int64_t>(file_size_, 1)))
      throw STREAM_ERROR("'", path_, "' inflates to more than ", max_ratio_, " times its ", file_size_ >> 10, " KiB (",
                         inflated >> 20, " MiB so far): a gzip bomb, not a ", noun_,
                         " as PyTorch writes one (its traces and dumps inflate 13 to 19 times); if it is one, "
                         "gunzip it and give the file itself");
  }
  if (progress_ && file_size_ > 0) {
    const double read = static_cast<double>(gzoffset(file_));
    if (!progress_(std::min(1.0, read / static_cast<double>(file_size_))))
      throw STREAM_ERROR("reading '", path_, "' was cancelled");
  }
}

}  // namespace ddpscope::probes
