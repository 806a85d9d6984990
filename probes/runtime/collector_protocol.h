// What ranks and the collector say to each other over ZeroMQ.
//
// Batches: a DEALER socket on each rank, the collector's ROUTER socket; each message
// has two frames: the run's token, then an encoded EventBatch (event_batch.h). Messages
// whose token is wrong are rejected and counted. Once a batch is committed to the run
// file the collector answers with a BatchAck, so a rank knows which of its events are
// safe in the file (they survive the rank being killed the next moment).
//
// Clock pings: a DEALER socket on each rank, the collector's ROUTER socket, served by a
// thread of its own so ingest never delays an answer. A ping is [token, ClockPing]; the
// answer is [ClockPong]. The collector may also send requests there (kGraphRequest).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace ddpscope::probes {

struct BatchAck {
  uint64_t sequence;
  uint64_t events;
};

struct ClockPing {
  uint64_t sequence;
  int64_t t0_ns;
};
struct ClockPong {
  uint64_t sequence;
  int64_t t0_ns;
  int64_t t_collector_ns;
};

// Sent by the collector on the clock socket, unasked: record the next iteration's
// autograd graph (probe.h, request_graph_snapshot).
inline constexpr const char* kGraphRequest = "graph";
// Sent the same way when the user asks where every rank's code stands now (`hang --ask`,
// SIGUSR2 to the launcher): take every thread's stack (stall_watcher.h).
inline constexpr const char* kStacksRequest = "stacks";

// The clock messages' bodies as they arrive (fuzzed with the batches,
// tests/fuzz/fuzz_event_batch.cpp): exactly one struct's bytes, else nothing.
template <typename Message>
std::optional<Message> decode_clock_message(const void* data, size_t size) {
  if (size != sizeof(Message)) return std::nullopt;
  Message m;
  std::memcpy(&m, data, sizeof m);
  return m;
}

// Environment variables the launcher sets for every rank.
inline constexpr const char* kCollectorEnv = "DDPSCOPE_COLLECTOR";             // batch endpoint
inline constexpr const char* kCollectorClockEnv = "DDPSCOPE_COLLECTOR_CLOCK";  // ping endpoint
inline constexpr const char* kRunTokenEnv = "DDPSCOPE_RUN_TOKEN";
// Test hook: pretend this process's clock is off by NS nanoseconds ("NS"), or only
// rank R's ("R:NS").
inline constexpr const char* kClockSkewEnv = "DDPSCOPE_CLOCK_SKEW_NS";
// The flight recorder's dump files: this prefix + the rank + ".json" (flight_recorder.h).
inline constexpr const char* kFlightDumpEnv = "DDPSCOPE_FR_DUMP";

}  // namespace ddpscope::probes
