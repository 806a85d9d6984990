#include "sequence_data.h"

#include "time_format.h"
#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace ddpscope::gui {
namespace {

// The name of distributed autograd's gradient messages and the prefix of ddpscope's own
// functions (engine/dist_autograd/dist_engine.h, engine/rpc): the run file only has the
// names, and the GUI does not link the engine.
constexpr const char* kGradientFunction = "_ddpscope.dist_backward";
constexpr const char* kInternalPrefix = "_ddpscope.";

}  // namespace

ArrowKind classifyMessage(const std::string& wire_kind, const std::string& name) {
  if (wire_kind == "error") return ArrowKind::Error;
  if (wire_kind == "call" && name == kGradientFunction) return ArrowKind::Gradient;
  if (wire_kind == "call" || wire_kind == "remote_call") {
    return name.rfind(kInternalPrefix, 0) == 0 ? ArrowKind::Internal : ArrowKind::Request;
  }
  if (wire_kind == "response") {
    return name.rfind(kInternalPrefix, 0) == 0 && name != kGradientFunction ? ArrowKind::Internal : ArrowKind::Response;
  }
  return ArrowKind::RRef;  // rref_fetch, rref_user_delete, rref_fork_request, rref_child_accept, ack
}

namespace {

// "1:7": the sender's worker id and its counter (msg ids are worker << 48 | counter).
std::string formatMessageId(int64_t id) {
  const auto u = static_cast<uint64_t>(id);
  return std::to_string(u >> 48) + ":" + std::to_string(u & ((uint64_t{1} << 48) - 1));
}

std::string formatBytes(int64_t bytes) {
  char buf[32];
  if (bytes >= (int64_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  } else if (bytes >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  }
  return buf;
}

}  // namespace

const char* arrowKindName(ArrowKind kind) {
  static constexpr const char* kNames[kNumArrowKinds] = {"request",  "response", "error",
                                                         "gradient", "RRef",     "internal"};
  const auto i = static_cast<int>(kind);
  return i < kNumArrowKinds ? kNames[i] : "?";
}

bool SequenceFilter::accepts(const SequenceArrow& a) const {
  if (!(kinds & (1u << static_cast<int>(a.kind)))) return false;
  if (ctx_id != -2 && a.ctx_id != ctx_id) return false;
  return worker < 0 || a.src == worker || a.dst == worker;
}

const std::string& SequenceData::nameOf(int32_t id) const {
  static const std::string unknown = "?";
  return id >= 0 && static_cast<size_t>(id) < names.size() ? names[static_cast<size_t>(id)] : unknown;
}

std::pair<size_t, size_t> SequenceData::window(int64_t t0_ns, int64_t t1_ns) const {
  const auto by_start = [](const SequenceArrow& a, int64_t t) { return a.startNs() < t; };
  const auto first = std::lower_bound(arrows.begin(), arrows.end(), t0_ns - longest_ns, by_start);
  const auto last = std::lower_bound(first, arrows.end(), t1_ns + 1, by_start);
  return {static_cast<size_t>(first - arrows.begin()), static_cast<size_t>(last - arrows.begin())};
}

SequenceData loadSequence(probes::RunStoreReader& run, int workers) {
  SequenceData d;
  d.workers = workers;
  std::unordered_map<std::string, int32_t> ids;
  const auto intern = [&](const std::string& s) {
    auto [it, inserted] = ids.try_emplace(s, static_cast<int32_t>(d.names.size()));
    if (inserted) d.names.push_back(s);
    return it->second;
  };
  bool first = true;
  for (const auto& m : run.messages()) {
    SequenceArrow a;
    a.t_send_ns = m.t_send_ns;
    a.t_recv_ns = m.t_recv_ns;
    if (a.startNs() < 0) continue;  // neither end recorded: nothing to place
    a.msg_id = m.msg_id;
    a.ctx_id = m.ctx_id;
    a.bytes = m.bytes;
    a.src = m.src_rank;
    a.dst = m.dst_rank;
    a.kind = classifyMessage(m.kind, m.name);
    a.name = intern(m.name);
    a.wire_kind = intern(m.kind);
    d.workers = std::max({d.workers, a.src + 1, a.dst + 1});
    const int64_t end = std::max(a.t_send_ns, a.t_recv_ns);
    d.begin_ns = first ? a.startNs() : std::min(d.begin_ns, a.startNs());
    d.end_ns = first ? end : std::max(d.end_ns, end);
    first = false;
    if (a.t_send_ns >= 0 && a.t_recv_ns >= 0) {
      d.longest_ns = std::max(d.longest_ns, a.t_recv_ns - a.t_send_ns);
    } else if (a.t_recv_ns < 0) {
      ++d.in_flight;
    }
    if (a.ctx_id >= 0) {
      auto& w = d.contexts[a.ctx_id];
      w.insert(a.src);
      w.insert(a.dst);
    }
    d.arrows.push_back(a);
  }
  // The store orders by send time; arrows known only by their receive go in by it.
  std::stable_sort(d.arrows.begin(), d.arrows.end(),
                   [](const SequenceArrow& x, const SequenceArrow& y) { return x.startNs() < y.startNs(); });
  return d;
}

std::string describeArrow(const SequenceData& data, const SequenceArrow& a) {
  std::string s = data.nameOf(a.wire_kind) + " of '" + data.nameOf(a.name) + "' from worker " + std::to_string(a.src) +
                  " to worker " + std::to_string(a.dst) + ", message " + formatMessageId(a.msg_id);
  if (a.ctx_id >= 0) s += ", context " + formatMessageId(a.ctx_id);
  s += ", " + formatBytes(a.bytes);
  // On the clock of the ruler and the timeline: time after the run's start.
  if (a.t_send_ns >= 0) s += ", sent at " + formatDuration(a.t_send_ns - data.origin());
  if (a.t_send_ns >= 0 && a.t_recv_ns >= 0) {
    char buf[48];
    std::snprintf(buf, sizeof buf, ", %.1f us on the way", static_cast<double>(a.t_recv_ns - a.t_send_ns) / 1e3);
    s += buf;
  } else if (a.t_recv_ns < 0) {
    s += ", never received (in flight when the run was read, or lost)";
  } else {
    s += ", its send was not recorded";
  }
  s += " [" + std::string(arrowKindName(a.kind)) + "]";
  return s;
}

}  // namespace ddpscope::gui
