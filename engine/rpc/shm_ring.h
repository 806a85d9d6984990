// A one-way byte stream between two processes of one host, through memory both map (the
// shared-memory transport, shm_transport.h, has one per ordered pair of workers). One
// thread writes at a time and one reads: the writer moves `tail` on, the reader `head`,
// and neither waits for the other. Bytes are the TCP transport's framing, so the reader
// hands them to a FrameReader as if they came from a socket.
//
// Neither side sleeps on the ring itself. A reader with nothing to read says it is going
// to sleep (reader_sleeping) and then waits on its wake-up fd; a writer that finds that
// flag set after it published its bytes writes to that fd. The flag and the index are
// read each after writing the other, with a full fence between (the store-load order
// that futex-style wake-ups need), so no wake-up is lost. The same holds for a writer
// that waits for room (writer_waiting) and the reader that makes some.
//
// The other process may be broken or hostile: every index it wrote is checked before use,
// and a ring whose indices make no sense is reported, never followed out of bounds.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ddpscope::rpc {

class ShmRing {
 public:
  // The bytes a region with `capacity` bytes of ring needs (its header included).
  static size_t region_bytes(size_t capacity);
  // Makes `region` (region_bytes(capacity) bytes, zeroed) a ring; the writer does this.
  // `capacity` is a power of two.
  static void format(void* region, size_t capacity);
  // Attaches to `region` of `bytes`, formatted by the other process; throws Error saying
  // what is wrong when it is not such a ring.
  ShmRing(void* region, size_t bytes);

  // Writer: copies what fits of `pieces`, advancing them as a socket's writev would
  // (written entries get length 0). Returns the bytes written, or -1 when the ring's
  // indices are broken.
  ssize_t write_some(std::span<iovec> pieces);
  // Writer, after writing: whether the reader said it sleeps (then wake it).
  bool reader_needs_wake();
  // Writer, with bytes waiting for room: says so; true when room came meanwhile.
  bool wait_for_room();
  void stop_waiting_for_room();
  size_t room() const;

  // Reader: the bytes there are to read (0 when the indices are broken: see broken()).
  size_t readable() const;
  // Reader: copies up to `room` bytes into `into`; the number copied.
  size_t read(uint8_t* into, size_t room);
  // Reader, after reading: whether the writer waits for room (then wake it).
  bool writer_needs_wake();
  // Reader, before it sleeps: says so; true when bytes came meanwhile (do not sleep).
  bool going_to_sleep();
  void awake();

  bool broken() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Header;
  Header* header_;
  uint8_t* data_;
  size_t capacity_;
};

}  // namespace ddpscope::rpc
