// libFuzzer harness of the shared-memory transport's reading side (shm_ring.h with the
// framing of stream_framing.h): a region whose header, indices and bytes the input chooses,
// as a broken or hostile writer could leave them, is attached (or refused) and read
// until empty; never crash, read out of bounds, or loop without end. Built and run by
// run_fuzz.sh.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "ddpscope/error.h"
#include "rpc/shm_ring.h"
#include "rpc/stream_framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 + 16) return 0;
  const size_t capacity = size_t{64} << (data[0] % 8);  // 64 B to 8 KiB
  const bool raw_header = data[1] & 1;                  // the header itself from the input
  data += 2;
  size -= 2;
  std::vector<uint64_t> words(ddpscope::rpc::ShmRing::region_bytes(capacity) / 8);
  auto* region = reinterpret_cast<uint8_t*>(words.data());
  ddpscope::rpc::ShmRing::format(region, capacity);
  if (raw_header) {
    std::memcpy(region, data, std::min<size_t>(size, 320));  // magic, capacity, indices, flags
  } else {
    std::memcpy(region + 64, data, 8);       // tail
    std::memcpy(region + 128, data + 8, 8);  // head
    data += 16;
    size -= 16;
  }
  std::memcpy(region + 4096, data, std::min(size, capacity));
  size_t frames = 0;
  try {
    ddpscope::rpc::ShmRing ring(region, words.size() * 8);
    ddpscope::rpc::FrameReader reader(32 << 10);
    const auto count = [&frames](ddpscope::rpc::IncomingMessage m) { frames += m.frames.size(); };
    std::string why;
    for (int reads = 0; reads < 4096 && !ring.broken(); ++reads) {
      const auto [where, room] = reader.space();
      const size_t got = ring.read(where, room);
      if (got == 0 || !reader.received(got, count, &why)) break;
    }
  } catch (const ddpscope::Error&) {
    // refused: not a ring this version writes
  }
  return frames > size_t{1} << 40;  // always 0: keeps the count from being optimised away
}
