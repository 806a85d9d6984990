// A job's secret: 128 random bits from the system's entropy (/dev/urandom), as 32 hex
// digits. Every message to a job's collector or RPC agent must carry it.
#pragma once

#include <random>
#include <string>

namespace ddpscope {

inline std::string random_token() {
  std::random_device entropy;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i)
    token.push_back(kHex[entropy() & 15]);
  return token;
}

}  // namespace ddpscope
