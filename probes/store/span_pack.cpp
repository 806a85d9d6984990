#include "span_pack.h"

#include <zstd.h>

#include <memory>

#include "ddpscope/error.h"

namespace ddpscope::probes {
namespace {

constexpr uint8_t kFormat = 2;  // format 1 had every column but the last (flags)
// zstd's fastest level: ingest is the constraint, and the columns' varints already
// shrink most of what a higher level would find (measured in tests/bench/bench_span_packs).
constexpr int kSpanPackLevel = 1;
constexpr size_t kMaxVarint = 10;

// A column: how a span's field is read and written, and whether it is stored as the
// difference from the previous span's (times and ids that grow) or as it is.
struct Column {
  int64_t (*get)(const PackedSpan&);
  void (*set)(PackedSpan&, int64_t);
  bool delta;
};

#define DDPSCOPE_PACK_FIELD(field, delta)                                                    \
  Column {                                                                                   \
    [](const PackedSpan& s) { return static_cast<int64_t>(s.field); },                       \
        [](PackedSpan& s, int64_t v) { s.field = static_cast<decltype(s.field)>(v); }, delta \
  }

// The order is the format: a new column means a new format byte.
const Column kColumns[] = {
    DDPSCOPE_PACK_FIELD(kind, false),
    DDPSCOPE_PACK_FIELD(name_id, false),
    DDPSCOPE_PACK_FIELD(t_begin_ns, true),
    // The duration, not the end: small where the end is as large as the begin.
    // Wrapping arithmetic: any two times (a damaged file's too) give a duration and back.
    Column{[](const PackedSpan& s) {
             return static_cast<int64_t>(static_cast<uint64_t>(s.t_end_ns) - static_cast<uint64_t>(s.t_begin_ns));
           },
           [](PackedSpan& s, int64_t v) {
             s.t_end_ns = static_cast<int64_t>(static_cast<uint64_t>(s.t_begin_ns) + static_cast<uint64_t>(v));
           },
           false},
    DDPSCOPE_PACK_FIELD(iteration, true),
    DDPSCOPE_PACK_FIELD(bucket, false),
    DDPSCOPE_PACK_FIELD(param, false),
    DDPSCOPE_PACK_FIELD(bytes, false),
    DDPSCOPE_PACK_FIELD(peer, false),
    DDPSCOPE_PACK_FIELD(seq, true),
    DDPSCOPE_PACK_FIELD(ctx_id, true),
    DDPSCOPE_PACK_FIELD(msg_id, true),
    DDPSCOPE_PACK_FIELD(rref_id, true),
    DDPSCOPE_PACK_FIELD(fork_id, true),
    DDPSCOPE_PACK_FIELD(flags, false),
};
#undef DDPSCOPE_PACK_FIELD
constexpr size_t kNumColumns = sizeof(kColumns) / sizeof(kColumns[0]);

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) throw Error("span pack is damaged: a value runs past its end", __FILE__, __LINE__);
      const uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw Error("span pack is damaged: a value is longer than 64 bits", __FILE__, __LINE__);
  }
};

ZSTD_CCtx* compressor() {
  thread_local std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> ctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  return ctx.get();
}
ZSTD_DCtx* decompressor() {
  thread_local std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  return ctx.get();
}

}  // namespace

std::string encode_pack(const PackedSpan* spans, size_t count) {
  DDPSCOPE_CHECK(count <= kMaxPackSpans, "span pack: ", count, " spans, more than a pack holds (", kMaxPackSpans, ")");
  thread_local std::string payload;
  payload.clear();
  payload.reserve(count * kNumColumns * 2);
  for (const Column& c : kColumns) {
    int64_t previous = c.delta ? -1 : 0;
    for (size_t i = 0; i < count; ++i) {
      const int64_t v = c.get(spans[i]);
      // Differences wrap rather than overflow (two's complement), and wrap back on decode.
      put_varint(payload, zigzag(static_cast<int64_t>(static_cast<uint64_t>(v) - static_cast<uint64_t>(previous))));
      if (c.delta) previous = v;
    }
  }
  std::string out;
  out.push_back(static_cast<char>(kFormat));
  put_varint(out, count);
  put_varint(out, payload.size());
  const size_t header = out.size();
  out.resize(header + ZSTD_compressBound(payload.size()));
  const size_t n = ZSTD_compressCCtx(compressor(), out.data() + header, out.size() - header, payload.data(),
                                     payload.size(), kSpanPackLevel);
  DDPSCOPE_CHECK(!ZSTD_isError(n), "span pack: zstd could not compress (", ZSTD_getErrorName(n), ")");
  out.resize(header + n);
  return out;
}

size_t decode_pack(const void* data, size_t size, std::vector<PackedSpan>& out) {
  Cursor in{static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + size};
  if (size == 0) throw Error("span pack is damaged: it is empty", __FILE__, __LINE__);
  const uint8_t format = *in.p++;
  if (format != kFormat && format != 1) {
    throw Error(detail::concat("span pack has format ", int{format}, ", which this ddpscope does not read (it reads 1 ",
                               "and ", int{kFormat}, "); update ddpscope"),
                __FILE__, __LINE__);
  }
  const uint64_t count = in.varint();
  const uint64_t payload_size = in.varint();
  const size_t columns = format == 1 ? kNumColumns - 1 : kNumColumns;
  if (count > kMaxPackSpans || payload_size > count * columns * kMaxVarint || payload_size < count * columns) {
    throw Error(detail::concat("span pack is damaged: ", count, " spans in ", payload_size, " bytes"), __FILE__,
                __LINE__);
  }
  thread_local std::string payload;
  payload.resize(payload_size);
  const size_t got =
      ZSTD_decompressDCtx(decompressor(), payload.data(), payload.size(), in.p, static_cast<size_t>(in.end - in.p));
  if (ZSTD_isError(got) || got != payload_size) {
    throw Error(detail::concat("span pack is damaged: its compressed data ",
                               ZSTD_isError(got) ? std::string("does not decompress (") + ZSTD_getErrorName(got) + ")"
                                                 : detail::concat("holds ", got, " bytes, not ", payload_size)),
                __FILE__, __LINE__);
  }
  const size_t base = out.size();
  out.resize(base + count);
  PackedSpan* spans = out.data() + base;
  Cursor column{reinterpret_cast<const uint8_t*>(payload.data()),
                reinterpret_cast<const uint8_t*>(payload.data()) + payload.size()};
  try {
    for (size_t k = 0; k < columns; ++k) {
      const Column& c = kColumns[k];
      int64_t previous = c.delta ? -1 : 0;
      for (size_t i = 0; i < count; ++i) {
        const int64_t v =
            static_cast<int64_t>(static_cast<uint64_t>(previous) + static_cast<uint64_t>(unzigzag(column.varint())));
        c.set(spans[i], v);
        if (c.delta) previous = v;
      }
    }
  } catch (...) {
    out.resize(base);
    throw;
  }
  if (column.p != column.end) {
    out.resize(base);
    throw Error(
        detail::concat("span pack is damaged: ", column.end - column.p, " bytes left after its ", count, " spans"),
        __FILE__, __LINE__);
  }
  return count;
}

}  // namespace ddpscope::probes
