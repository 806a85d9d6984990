#include "event_batch.h"

#include <cstring>

#include "ddpscope/byte_reader.h"
#include "ddpscope/error.h"

namespace ddpscope::probes {
namespace {

constexpr uint32_t kMagic = 0x44445042;  // "DDPB"
constexpr uint32_t kVersion = 2;         // 2: names carry their call site

struct Header {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  uint32_t num_threads;
  uint64_t sequence;
  uint64_t dropped_total;
  int64_t clock_offset_ns;
  uint32_t num_names;
  uint32_t num_events;
  uint32_t num_records;
  uint32_t reserved;
};

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void str(const std::string& s) {
    pod(static_cast<uint32_t>(s.size()));
    out.append(s);
  }
  std::string out;
};

struct Truncated {
  [[noreturn]] void operator()(const char* what, size_t needed, size_t left) const {
    throw Error(ddpscope::detail::concat("event batch truncated while reading ", what, " (", left, " bytes left, ",
                                         needed, " needed)"),
                __FILE__, __LINE__);
  }
};
using Reader = ByteReader<Truncated>;

}  // namespace

std::string encode(const EventBatch& b) {
  Writer w;
  w.pod(Header{kMagic, kVersion, b.rank, static_cast<uint32_t>(b.threads.size()), b.sequence, b.dropped_total,
               b.clock_offset_ns, static_cast<uint32_t>(b.names.size()), static_cast<uint32_t>(b.events.size()),
               static_cast<uint32_t>(b.records.size()), 0});
  for (const auto& t : b.threads) {
    w.pod(t.thread);
    w.pod(t.tid);
    w.str(t.name);
  }
  for (const auto& n : b.names) {
    w.str(n.name);
    w.str(n.file);
    w.pod(n.line);
  }
  w.out.append(reinterpret_cast<const char*>(b.events.data()), b.events.size() * sizeof(BatchEvent));
  for (const auto& r : b.records)
    w.str(r);
  return std::move(w.out);
}

EventBatch decode(const void* data, size_t size) {
  Reader r(data, size, Truncated{});
  const auto h = r.pod<Header>("the header");
  DDPSCOPE_CHECK(h.magic == kMagic, "not an event batch (bad magic number)");
  DDPSCOPE_CHECK(h.version == kVersion, "event batch format ", h.version, " is not the one this collector reads (",
                 kVersion, "); run ranks and collector from the same ddpscope build");
  EventBatch b;
  b.rank = h.rank;
  b.sequence = h.sequence;
  b.dropped_total = h.dropped_total;
  b.clock_offset_ns = h.clock_offset_ns;
  for (uint32_t i = 0; i < h.num_threads; ++i) {
    ThreadInfo t;
    t.thread = r.pod<uint16_t>("a thread");
    t.tid = r.pod<int64_t>("a thread");
    t.name = r.sized_string("a thread name");
    b.threads.push_back(std::move(t));
  }
  for (uint32_t i = 0; i < h.num_names; ++i) {
    NameInfo n;
    n.name = r.sized_string("a name");
    n.file = r.sized_string("a name's file");
    n.line = r.pod<uint32_t>("a name's line");
    b.names.push_back(std::move(n));
  }
  r.need(static_cast<size_t>(h.num_events) * sizeof(BatchEvent), "the events");
  b.events.resize(h.num_events);
  r.copy_to(b.events.data(), b.events.size() * sizeof(BatchEvent), "the events");
  for (const auto& e : b.events) {
    DDPSCOPE_CHECK(e.name < b.names.size(), "event batch: name index ", e.name, " out of range");
  }
  for (uint32_t i = 0; i < h.num_records; ++i)
    b.records.push_back(r.sized_string("a record"));
  DDPSCOPE_CHECK(r.done(), "event batch has trailing bytes");
  return b;
}

}  // namespace ddpscope::probes
