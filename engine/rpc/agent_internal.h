// What the two halves of RpcAgent share (rpc_agent.cpp sends and starts,
// rpc_agent_serve.cpp receives and serves). Not for use outside the agent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probe.h"
#include "records.h"
#include "value.h"
#include "wire_format.h"

namespace ddpscope::rpc::agent_internal {

// The run file names RPC messages by the wire's type codes.
static_assert(static_cast<int>(wire::MessageType::Call) == static_cast<int>(probes::RpcMessageKind::Call) &&
              static_cast<int>(wire::MessageType::Ack) == static_cast<int>(probes::RpcMessageKind::Ack) &&
              static_cast<int>(wire::MessageType::RRefChildAccept) ==
                  static_cast<int>(probes::RpcMessageKind::RRefChildAccept));

// Rejected messages marked on the timeline; later ones are only counted.
inline constexpr uint64_t kRejectionsMarked = 100;
// Worker 0's function that counts graceful-shutdown votes (shutdown_tally.h).
inline constexpr const char* kShutdownVote = "_ddpscope.shutdown_vote";
// Answered by any live agent, whatever its program does: graceful shutdown asks it of a
// worker that has not voted yet, to tell one still working from one stopped or hung.
inline constexpr const char* kAlive = "_ddpscope.alive";

inline void record_message(probes::Kind kind, const std::string& name, int64_t t_begin_ticks, int32_t peer,
                           size_t bytes, const wire::Header& h) {
  if (!probes::enabled()) return;
  probes::EventArgs args;
  args.peer = static_cast<int16_t>(peer);
  args.bytes = static_cast<int64_t>(bytes);
  args.id = h.ctx_id;
  args.id2 = static_cast<int64_t>(h.msg_id);
  args.param = h.type;
  probes::record(kind, probes::intern(name, __FILE__, __LINE__), t_begin_ticks, probes::now_ticks(), args,
                 probes::kTimesInTicks);
}

// A pending call's `what` in a sentence: "call of 'add'", "to_here of RRef 1:7".
inline std::string describe_call(const std::string& what) {
  return what.find(' ') == std::string::npos ? "call of '" + what + "'" : what;
}

inline ValueList int_list(const std::vector<int64_t>& ids) {
  ValueList l;
  for (int64_t i : ids)
    l.emplace_back(i);
  return l;
}

}  // namespace ddpscope::rpc::agent_internal
