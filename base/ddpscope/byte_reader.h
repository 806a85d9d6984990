// ByteReader: reads fixed-size values and runs of bytes from a buffer, every length
// checked against what is left, for the two wire formats (RPC bodies, wire_format.h;
// probe event batches, event_batch.h). What a short buffer means is the caller's: each
// format reports it in its own words and error type through `on_truncated(what, needed,
// left)`, which must throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace ddpscope {

template <typename OnTruncated>
class ByteReader {
 public:
  ByteReader(const void* data, size_t size, OnTruncated on_truncated)
      : p_(static_cast<const uint8_t*>(data)), end_(p_ + size), on_truncated_(on_truncated) {}

  size_t left() const { return static_cast<size_t>(end_ - p_); }
  bool done() const { return p_ == end_; }
  void need(size_t n, const char* what) {
    if (left() < n) on_truncated_(what, n, left());
  }
  template <typename T>
  T pod(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  std::string bytes(size_t n, const char* what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  // A uint32 length, then that many bytes.
  std::string sized_string(const char* what) { return bytes(pod<uint32_t>(what), what); }
  void copy_to(void* dst, size_t n, const char* what) {
    need(n, what);
    if (n == 0) return;  // dst may be an empty vector's null data(): memcpy's pointers must not be null
    std::memcpy(dst, p_, n);
    p_ += n;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
  OnTruncated on_truncated_;
};

}  // namespace ddpscope
