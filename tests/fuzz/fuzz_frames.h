// How a fuzzer's flat input becomes a multipart message: repeated [u32 length][bytes];
// a length beyond what is left takes the rest. Shared by the libFuzzer harness and the
// test that replays the corpus, so both read a seed the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "rpc/wire_format.h"

namespace ddpscope::fuzz {

inline constexpr std::string_view kFuzzToken = "fuzz-token";

inline std::vector<rpc::wire::FrameView> split_frames(const uint8_t* data, size_t size) {
  std::vector<rpc::wire::FrameView> frames;
  size_t pos = 0;
  while (pos + 4 <= size && frames.size() < 8192) {
    uint32_t n;
    std::memcpy(&n, data + pos, 4);
    pos += 4;
    const size_t take = n <= size - pos ? n : size - pos;
    frames.push_back({data + pos, take});
    pos += take;
  }
  return frames;
}

}  // namespace ddpscope::fuzz
