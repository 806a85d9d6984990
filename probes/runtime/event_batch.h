// EventBatch: what a rank's shipper sends at once: its events (names replaced by an
// index into the batch's own name table), its threads, queued records and counters.
// encode()/decode() give the byte form sent to the collector; decode() checks every
// length, so a malformed message is an error, not a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "event.h"

namespace ddpscope::probes {

struct BatchEvent {
  int64_t t_begin_ns;
  int64_t t_end_ns;
  int64_t bytes;
  int64_t id;
  int64_t id2;
  int32_t iteration;
  int32_t param;
  uint32_t name;  // index into EventBatch::names
  int16_t bucket;
  int16_t peer;
  uint16_t thread;
  uint8_t kind;
  uint8_t flags;
};
static_assert(sizeof(BatchEvent) == 64);

// A name and the call site that recorded it.
struct NameInfo {
  NameInfo() = default;
  NameInfo(const char* n, std::string f = {}, uint32_t l = 0) : name(n), file(std::move(f)), line(l) {}
  NameInfo(std::string n, std::string f = {}, uint32_t l = 0) : name(std::move(n)), file(std::move(f)), line(l) {}
  std::string name;
  std::string file;
  uint32_t line = 0;
  bool operator==(const NameInfo&) const = default;
};

struct ThreadInfo {
  uint16_t thread = 0;
  int64_t tid = 0;
  std::string name;
};

struct EventBatch {
  int32_t rank = 0;
  uint64_t sequence = 0;        // per rank, from 0
  uint64_t dropped_total = 0;   // events this rank dropped so far (full buffers, no sink)
  int64_t clock_offset_ns = 0;  // add to this rank's times to get the collector's
  std::vector<ThreadInfo> threads;
  std::vector<NameInfo> names;
  std::vector<BatchEvent> events;
  std::vector<std::string> records;  // JSON objects (records.h)
  // An importer's per-event arguments: (index into events, a JSON object), stored in the
  // run file's span_args. Never encoded: the probes' wire format has no place for them.
  std::vector<std::pair<uint32_t, std::string>> args;
};

std::string encode(const EventBatch& batch);
// Throws ddpscope::Error naming what is wrong with `bytes`.
EventBatch decode(const void* data, size_t size);

}  // namespace ddpscope::probes
