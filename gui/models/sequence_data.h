// SequenceData: a run's RPC messages arranged for the send/recv view, a sequence diagram
// with one lifeline per worker on the run's common clock. Each message is one arrow, from
// its send on the sender to its receive on the receiver. It covers requests, responses,
// distributed autograd's gradient messages, RRef control messages and ddpscope's own
// protocol. Plain data built from the run store (RUN_FILE.md, "RPC messages"); the view
// only paints it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "run_store_reader.h"

namespace ddpscope::gui {

// What an arrow is, for its colour and the kind filter.
enum class ArrowKind : uint8_t {
  Request = 0,   // a call or remote() of a user function
  Response = 1,  // its answer
  Error = 2,     // an answer that is an error
  Gradient = 3,  // distributed backward: gradients sent to a send function's worker
  RRef = 4,      // to_here and the RRef protocol (fork, accept, delete, ack)
  Internal = 5,  // ddpscope's own calls: context release, SMART activation, optimizer, shutdown
};
inline constexpr int kNumArrowKinds = 6;
const char* arrowKindName(ArrowKind kind);

struct SequenceArrow {
  int64_t t_send_ns = -1;  // -1: the sender recorded nothing
  int64_t t_recv_ns = -1;  // -1: not received (in flight, or lost)
  int64_t msg_id = 0;
  int64_t ctx_id = -1;  // -1: outside any distributed autograd context
  int64_t bytes = 0;
  int src = -1, dst = -1;
  ArrowKind kind = ArrowKind::Request;
  int32_t name = 0;       // index into SequenceData::names (the function)
  int32_t wire_kind = 0;  // index into SequenceData::names (call, response, rref_fetch, ...)

  // Where the arrow starts on the clock: its send, or its receive when no send is known.
  int64_t startNs() const { return t_send_ns >= 0 ? t_send_ns : t_recv_ns; }
};

struct SequenceFilter {
  int64_t ctx_id = -2;    // -2: every context; -1: outside contexts; else that context
  int worker = -1;        // -1: every worker; else arrows from or to it
  uint32_t kinds = 0x3f;  // bit k: ArrowKind k shown
  bool accepts(const SequenceArrow& a) const;
};

struct SequenceData {
  int workers = 0;                    // lifelines: ranks 0 .. workers-1
  std::vector<SequenceArrow> arrows;  // by startNs()
  std::vector<std::string> names;
  // The contexts seen, each with the workers its messages touched.
  std::map<int64_t, std::set<int>> contexts;
  int64_t begin_ns = 0, end_ns = 0;
  // Where the ruler's zero is: the run's start, as on the timeline (set by the run's
  // loader), so a message is at the same time on both tabs. -1: the first message.
  int64_t origin_ns = -1;
  int64_t origin() const { return origin_ns >= 0 ? origin_ns : begin_ns; }
  int64_t longest_ns = 0;  // the longest send-to-receive: how far back a window must look
  int64_t in_flight = 0;   // arrows with a send and no receive

  const std::string& nameOf(int32_t id) const;
  // The arrows whose start lies in [t0 - longest_ns, t1]: every arrow that can cross the
  // window, as index range [first, last) into `arrows`.
  std::pair<size_t, size_t> window(int64_t t0_ns, int64_t t1_ns) const;
};

// A message's kind from its wire kind ("call", "response", ...) and function name.
ArrowKind classifyMessage(const std::string& wire_kind, const std::string& name);

// Throws probes::RunStoreError when the run cannot be read. `workers`: the run's world
// size (arrows naming a rank beyond it widen it).
SequenceData loadSequence(probes::RunStoreReader& run, int workers);

// "call of 'add' from worker 0 to worker 1, message 0:5, 210 B, 48.2 us" for a tooltip.
std::string describeArrow(const SequenceData& data, const SequenceArrow& a);

}  // namespace ddpscope::gui
