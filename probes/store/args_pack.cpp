#include "args_pack.h"

#include <zstd.h>

#include <cstdint>
#include <cstring>

#include "ddpscope/error.h"

namespace ddpscope::probes {

namespace {
constexpr int kArgsPackLevel = 1;                       // ingest is the constraint, as for span packs
constexpr unsigned long long kMaxPayload = 256u << 20;  // a pack's args, decompressed, at most
}  // namespace

std::string encode_args_pack(const std::vector<const std::string*>& args) {
  std::string payload;
  for (const std::string* a : args) {
    const auto n = static_cast<uint32_t>(a ? a->size() : 0);
    char len[4] = {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16),
                   static_cast<char>(n >> 24)};
    payload.append(len, 4);
    if (a) payload += *a;
  }
  std::string out(ZSTD_compressBound(payload.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), payload.data(), payload.size(), kArgsPackLevel);
  DDPSCOPE_CHECK(!ZSTD_isError(n), "span arguments: zstd could not compress (", ZSTD_getErrorName(n), ")");
  out.resize(n);
  return out;
}

std::string args_in_pack(const void* data, size_t size, size_t index) {
  const unsigned long long content = ZSTD_getFrameContentSize(data, size);
  DDPSCOPE_CHECK(content != ZSTD_CONTENTSIZE_ERROR && content != ZSTD_CONTENTSIZE_UNKNOWN && content <= kMaxPayload,
                 "span arguments are damaged: not a zstd frame of at most 256 MiB; the run file's span_args table "
                 "does not hold what ddpscope wrote");
  std::string payload(static_cast<size_t>(content), '\0');
  const size_t n = ZSTD_decompress(payload.data(), payload.size(), data, size);
  DDPSCOPE_CHECK(!ZSTD_isError(n) && n == payload.size(), "span arguments are damaged (",
                 ZSTD_isError(n) ? ZSTD_getErrorName(n) : "shorter than said", ")");
  size_t at = 0;
  for (size_t i = 0;; ++i) {
    if (at + 4 > payload.size()) return {};  // fewer spans than `index`
    uint32_t len = 0;
    for (int b = 3; b >= 0; --b)
      len = (len << 8) | static_cast<unsigned char>(payload[at + static_cast<size_t>(b)]);
    at += 4;
    DDPSCOPE_CHECK(len <= payload.size() - at, "span arguments are damaged: an entry runs past the pack's end");
    if (i == index) return payload.substr(at, len);
    at += len;
  }
}

}  // namespace ddpscope::probes
