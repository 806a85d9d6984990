// Span packs: how a run file (schema 8) stores spans. A pack holds up to kMaxPackSpans
// consecutive spans of one rank and thread, column by column (each column's values as
// zigzag varints of their difference from the previous value, which makes most of them
// one byte), then compressed with zstd. Rows of SQLite's own cost ~57 bytes a span and
// capped ingest near 1.6M spans/s; packs are a few bytes a span.
//
//   std::string blob = encode_pack(spans);      // spans of one rank and thread
//   std::vector<PackedSpan> back;
//   decode_pack(blob.data(), blob.size(), back); // appends; throws on a damaged blob
//
// The blob starts with a format byte: 1 (no flags column, read as 0) or 2 (flags last).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ddpscope::probes {

inline constexpr size_t kMaxPackSpans = 1 << 16;

// One span's stored fields (rank and thread are the pack's). -1: not set.
struct PackedSpan {
  int32_t kind = 0;
  int32_t name_id = 0;
  int64_t t_begin_ns = 0, t_end_ns = 0;
  int64_t iteration = -1, bucket = -1, param = -1, bytes = -1, peer = -1;
  int64_t seq = -1, ctx_id = -1, msg_id = -1, rref_id = -1, fork_id = -1;
  int32_t flags = 0;  // kEndedByError (probe.h): the span was cut short by an error (format 2)
  bool operator==(const PackedSpan&) const = default;
};

// Encodes spans[begin, end) (at most kMaxPackSpans).
std::string encode_pack(const PackedSpan* spans, size_t count);
inline std::string encode_pack(const std::vector<PackedSpan>& spans) { return encode_pack(spans.data(), spans.size()); }

// Appends the pack's spans to `out`; returns how many. Throws ddpscope::Error saying what
// is wrong when the blob is not a sound pack (truncated, a count that does not match,
// values that run past its end).
size_t decode_pack(const void* data, size_t size, std::vector<PackedSpan>& out);

}  // namespace ddpscope::probes
