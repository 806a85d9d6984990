// The probe API: the one header the engine includes to record what it does.
//
// A span measures a scope; an instant marks a moment:
//
//   void Reducer::finalize_backward() {
//     DDPSCOPE_SPAN(span, probes::Kind::Finalize, "finalize");
//     span.args().iteration = iteration_;
//     ...
//   }
//   DDPSCOPE_INSTANT(probes::Kind::GradReady, "grad_ready", {.param = int32_t(i)});
//
// Cost: with DDPSCOPE_PROBES=OFF every macro compiles to nothing (a named span becomes an
// empty object). Compiled in but switched off at run time (the default until a
// ProbeSession starts), a probe is one predictable branch on a relaxed atomic load.
// Switched on, it reads the clock and writes one 64-byte record into this thread's
// lock-free ring buffer; no allocation, no lock, no SQLite. A shipper thread drains the
// buffers (probe_session.h). A full buffer drops the event and counts it.
//
// Thread-safety: every function here may be called from any thread.
#pragma once

#include <atomic>
#include <exception>
#include <cstdint>
#include <ctime>
#include <string_view>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "event.h"

namespace ddpscope::probes {

#ifdef DDPSCOPE_PROBES_COMPILED_OUT
inline constexpr bool kCompiledIn = false;
#else
inline constexpr bool kCompiledIn = true;
#endif

namespace detail {
extern std::atomic<bool> g_enabled;
extern std::atomic<int32_t> g_iteration;
// Appends to this thread's buffer (drops and counts when it is full).
void push(const Event& event) noexcept;
}  // namespace detail

// Whether probes record right now.
inline bool enabled() noexcept {
  if constexpr (!kCompiledIn) return false;
  return detail::g_enabled.load(std::memory_order_relaxed);
}
void set_enabled(bool on) noexcept;

// CLOCK_MONOTONIC in nanoseconds: the same clock as std::chrono::steady_clock.
inline int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// What spans and instants read: the CPU's time-stamp counter where there is one (half
// the cost of clock_gettime), converted to nanoseconds when shipped (tick_clock.h).
#if defined(__x86_64__)
inline constexpr bool kTicksAreTsc = true;
inline int64_t now_ticks() noexcept { return static_cast<int64_t>(__rdtsc()); }
#else
inline constexpr bool kTicksAreTsc = false;
inline int64_t now_ticks() noexcept { return now_ns(); }
#endif
// Event::flags bit: the times are ticks, not nanoseconds.
inline constexpr uint8_t kTimesInTicks = 1;

// The training iteration events are tagged with when they do not say otherwise.
inline void set_iteration(int64_t iteration) noexcept {
  detail::g_iteration.store(static_cast<int32_t>(iteration), std::memory_order_relaxed);
}
inline int32_t current_iteration() noexcept { return detail::g_iteration.load(std::memory_order_relaxed); }

// Asks the training loop to record the autograd graph of its next iteration (the
// first iteration's graph is always recorded); take_graph_request() consumes the ask.
void request_graph_snapshot() noexcept;
bool take_graph_request() noexcept;

// A stable location for a name built at run time (autograd node names) at a call site.
// Takes a lock the first time a thread sees a name there; later calls are a hash lookup.
const SourceLocation* intern(std::string_view name, const char* file, uint32_t line);
// The same for a name with static storage (op_type_name): looked up by its address, so
// the common path builds no string.
const SourceLocation* intern(const char* static_name, const char* file, uint32_t line);

// Names this thread in the run file ("compute", "comm:collectives", ...).
void set_thread_name(std::string_view name);

// Records an event measured elsewhere, with times in nanoseconds (CLOCK_MONOTONIC,
// e.g. from std::chrono::steady_clock), or in ticks when flags is kTimesInTicks.
inline void record(Kind kind, const SourceLocation* where, int64_t t_begin_ns, int64_t t_end_ns,
                   const EventArgs& args = {}, uint8_t flags = 0) noexcept {
  if (!enabled()) return;
  Event e;
  e.t_begin_ns = t_begin_ns;
  e.t_end_ns = t_end_ns;
  e.where = where;
  e.bytes = args.bytes;
  e.id = args.id;
  e.id2 = args.id2;
  e.iteration = args.iteration >= 0 ? args.iteration : current_iteration();
  e.param = args.param;
  e.bucket = args.bucket;
  e.peer = args.peer;
  e.kind = kind;
  e.flags = flags;
  e.reserved = 0;
  detail::push(e);
}

inline void instant(Kind kind, const SourceLocation* where, const EventArgs& args = {}) noexcept {
  if (!enabled()) return;
  const int64_t t = now_ticks();
  record(kind, where, t, t, args, kTimesInTicks);
}

// Records [construction, destruction) as one span when probes were on at construction.
class SpanScope {
 public:
  SpanScope(Kind kind, const SourceLocation* where) noexcept : kind_(kind), where_(where) {
    if (enabled()) {
      begin_ = now_ticks();
      unwinding_ = std::uncaught_exceptions();
    }
  }
  ~SpanScope() {
    if (begin_ < 0) return;
    // More exceptions in flight than when the scope began: it is being unwound.
    const uint8_t ended = std::uncaught_exceptions() > unwinding_ ? kEndedByError : 0;
    record(kind_, where_, begin_, now_ticks(), args_, static_cast<uint8_t>(kTimesInTicks | ended));
  }
  SpanScope(const SpanScope&) = delete;
  SpanScope& operator=(const SpanScope&) = delete;
  EventArgs& args() noexcept { return args_; }
  // Records now instead of at the end of the scope.
  void end() noexcept {
    if (begin_ >= 0) record(kind_, where_, begin_, now_ticks(), args_, kTimesInTicks);
    begin_ = -1;
  }
  // Records nothing: the span stays open in the run file, which is where its rank
  // failed (the hang analysis reads it so).
  void cancel() noexcept { begin_ = -1; }

 private:
  Kind kind_;
  const SourceLocation* where_;
  int64_t begin_ = -1;  // ticks
  int unwinding_ = 0;   // std::uncaught_exceptions() at the start
  EventArgs args_;
};

// What a named span becomes when probes are compiled out.
struct NullSpan {
  EventArgs& args() noexcept { return args_; }
  void end() noexcept {}
  void cancel() noexcept {}
  EventArgs args_;
};

}  // namespace ddpscope::probes

#define DDPSCOPE_PROBE_CAT2(a, b) a##b
#define DDPSCOPE_PROBE_CAT(a, b) DDPSCOPE_PROBE_CAT2(a, b)
// The call site's static location, named after the line.
#define DDPSCOPE_PROBE_LOCATION(name)                                                                          \
  static constexpr ::ddpscope::probes::SourceLocation DDPSCOPE_PROBE_CAT(ddpscope_probe_location_, __LINE__) { \
    name, __FILE__, __LINE__                                                                                   \
  }

#ifdef DDPSCOPE_PROBES_COMPILED_OUT
#define DDPSCOPE_SPAN(var, kind, name) [[maybe_unused]] ::ddpscope::probes::NullSpan var
#define DDPSCOPE_SPAN_DYNAMIC(var, kind, name_expr) [[maybe_unused]] ::ddpscope::probes::NullSpan var
#define DDPSCOPE_INSTANT(kind, name, ...) ((void)0)
#define DDPSCOPE_INSTANT_DYNAMIC(kind, name_expr, ...) ((void)0)
#define DDPSCOPE_RECORD(kind, name, t_begin, t_end, ...) ((void)0)
#else
// A span over the rest of the scope; `var` gives access to args() and end().
#define DDPSCOPE_SPAN(var, kind, name) \
  DDPSCOPE_PROBE_LOCATION(name);       \
  ::ddpscope::probes::SpanScope var { kind, &DDPSCOPE_PROBE_CAT(ddpscope_probe_location_, __LINE__) }
// The same with a name computed at run time (only while probes record).
#define DDPSCOPE_SPAN_DYNAMIC(var, kind, name_expr)                                                             \
  ::ddpscope::probes::SpanScope var {                                                                           \
    kind, ::ddpscope::probes::enabled() ? ::ddpscope::probes::intern((name_expr), __FILE__, __LINE__) : nullptr \
  }
#define DDPSCOPE_INSTANT(kind, name, ...)                                                                      \
  do {                                                                                                         \
    DDPSCOPE_PROBE_LOCATION(name);                                                                             \
    ::ddpscope::probes::instant(kind, &DDPSCOPE_PROBE_CAT(ddpscope_probe_location_, __LINE__), ##__VA_ARGS__); \
  } while (0)
// An instant with a name computed at run time (only while probes record).
#define DDPSCOPE_INSTANT_DYNAMIC(kind, name_expr, ...)                                                               \
  do {                                                                                                               \
    if (::ddpscope::probes::enabled()) {                                                                             \
      ::ddpscope::probes::instant(kind, ::ddpscope::probes::intern((name_expr), __FILE__, __LINE__), ##__VA_ARGS__); \
    }                                                                                                                \
  } while (0)
#define DDPSCOPE_RECORD(kind, name, t_begin, t_end, ...)                                                      \
  do {                                                                                                        \
    DDPSCOPE_PROBE_LOCATION(name);                                                                            \
    ::ddpscope::probes::record(kind, &DDPSCOPE_PROBE_CAT(ddpscope_probe_location_, __LINE__), t_begin, t_end, \
                               ##__VA_ARGS__);                                                                \
  } while (0)
#endif
