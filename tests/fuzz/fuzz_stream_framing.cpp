// libFuzzer harness of the stream transports' framing (stream_framing.h): any bytes, delivered
// in pieces whose sizes the input also chooses, must become whole messages or be refused;
// never crash, hang, or allocate past the frame limit. Built and run by run_fuzz.sh.
#include <algorithm>
#include <cstring>
#include <string>

#include "rpc/stream_framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t piece = 1 + data[0] % 97;  // how the kernel happened to split the stream
  ++data;
  --size;
  // 32 KiB a frame: 4099 of them stay under the harness's 256 MiB malloc limit.
  ddpscope::rpc::FrameReader reader(32 << 10);
  size_t frames = 0;
  const auto count = [&frames](ddpscope::rpc::IncomingMessage m) {
    for (const auto& f : m.frames)
      frames += f.size > 0 ? f.data[f.size - 1] != 0x7f : 1;  // touch each frame's last byte
  };
  std::string why;
  while (size > 0) {
    const auto [where, room] = reader.space();
    const size_t n = std::min({piece, room, size});
    std::memcpy(where, data, n);
    data += n;
    size -= n;
    if (!reader.received(n, count, &why)) break;
  }
  return frames > size_t{1} << 40;  // always 0: keeps the count from being optimised away
}
