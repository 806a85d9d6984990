#include "lesson_report.h"

#include <algorithm>
#include <sstream>

#include "ring_lesson.h"

namespace ddpscope::gui {
namespace {

const char* phase_name(BucketFill::Phase p) {
  switch (p) {
    case BucketFill::Phase::Filling: return "filling";
    case BucketFill::Phase::Ready: return "ready";
    case BucketFill::Phase::Reducing: return "reducing";
    case BucketFill::Phase::Reduced: return "reduced";
  }
  return "?";
}

// The ranks whose values a block sums, in order.
nlohmann::json summed(uint64_t holds) {
  nlohmann::json ranks = nlohmann::json::array();
  for (int r = 0; r < 64; ++r)
    if (holds >> r & 1) ranks.push_back(r);
  return ranks;
}

void ring_state(const Lesson& l, const LessonState& s, nlohmann::json& j) {
  j["ranks"] = l.ring_ranks;
  j["tensor_bytes"] = l.ring_tensor_bytes;
  nlohmann::json blocks = nlohmann::json::array();
  for (const auto& row : s.holds) {
    nlohmann::json rank = nlohmann::json::array();
    for (uint64_t h : row)
      rank.push_back(summed(h));
    blocks.push_back(rank);
  }
  j["blocks"] = blocks;
  j["sent_steps"] = s.ring_steps_done;
  j["received_steps"] = s.ring_steps_received;
  j["bytes_sent"] = s.ring_bytes_sent;
}

void ddp_state(const Lesson& l, const LessonState& s, nlohmann::json& j) {
  j["rank"] = l.rank;
  j["generation"] = s.generation;
  nlohmann::json buckets = nlohmann::json::array();
  for (const BucketFill& b : s.buckets) {
    nlohmann::json o = {{"params_ready", b.params_ready},
                        {"params_total", b.params_total},
                        {"bytes_ready", b.bytes_ready},
                        {"bytes_total", b.bytes_total},
                        {"phase", phase_name(b.phase)}};
    if (b.params_owned >= 0) o["params_owned"] = b.params_owned, o["stepped"] = b.stepped;
    buckets.push_back(o);
  }
  j["buckets"] = buckets;
}

void autograd_state(const Lesson& l, const LessonState& s, nlohmann::json& j) {
  j["context"] = l.ctx_id;
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < l.graph.nodes.size() && i < s.counters.size(); ++i) {
    const GraphNode& n = l.graph.nodes[i];
    nodes.push_back({{"node", n.op}, {"worker", n.rank}, {"waits_for", s.counters[i]}, {"ran", bool(s.executed[i])}});
  }
  j["nodes"] = nodes;
  nlohmann::json flight = nlohmann::json::array();
  for (size_t k : s.in_flight)
    flight.push_back({{"message", l.steps[k].msg_id},
                      {"from", l.steps[k].rank},
                      {"to", l.steps[k].peer},
                      {"name", l.steps[k].name}});
  j["in_flight"] = flight;
  nlohmann::json grads = nlohmann::json::array();
  for (int n : s.accumulated)
    grads.push_back(l.graph.nodes[static_cast<size_t>(n)].op);
  j["gradients_in_context"] = grads;
  j["released_by"] = s.released;
}

}  // namespace

std::string lesson_kind(const Lesson& l) { return l.ring ? "ring" : l.ddp ? "ddp" : "autograd"; }

nlohmann::json lesson_step_json(const Lesson& l, size_t applied) {
  applied = std::min(applied, l.steps.size());
  nlohmann::json j = {{"kind", lesson_kind(l)}, {"step", applied}, {"steps", l.steps.size()}};
  if (applied > 0) {
    const LessonStep& st = l.steps[applied - 1];
    j["narration"] = l.explain(applied - 1);
    j["concurrent_with_previous"] = st.concurrent;
    j["rank"] = st.rank;
  }
  const LessonState s = l.state_after(applied);
  if (l.ring)
    ring_state(l, s, j);
  else if (l.ddp)
    ddp_state(l, s, j);
  else
    autograd_state(l, s, j);
  return j;
}

std::string lesson_step_text(const Lesson& l, size_t applied) {
  const nlohmann::json j = lesson_step_json(l, applied);
  std::ostringstream out;
  out << "Step " << j["step"].get<size_t>() << " of " << j["steps"].get<size_t>() << "\n";
  if (j.contains("narration")) out << j["narration"].get<std::string>() << "\n";
  out << "\n";
  if (l.ring) {
    const LessonState s = l.state_after(std::min(applied, l.steps.size()));
    for (int r = 0; r < l.ring_ranks; ++r) {
      out << "rank " << r << ":";
      for (int b = 0; b < l.ring_ranks; ++b)
        out << "  block " << b << " = " << ring_holds_text(s.holds[size_t(r)][size_t(b)], l.ring_ranks);
      out << "   (sent " << s.ring_steps_done[size_t(r)] << " step(s), " << s.ring_bytes_sent[size_t(r)]
          << " B; received " << s.ring_steps_received[size_t(r)] << ")\n";
    }
  } else if (l.ddp) {
    out << "rank " << l.rank << ", buckets (generation " << j["generation"].get<int>() << "):\n";
    int b = 0;
    for (const auto& bucket : j["buckets"])
      out << "  bucket " << b++ << ": " << bucket["params_ready"].get<int>() << " of "
          << bucket["params_total"].get<int>() << " gradients, " << bucket["phase"].get<std::string>() << "\n";
  } else {
    out << "dependency counts:\n";
    for (const auto& n : j["nodes"])
      out << "  worker " << n["worker"].get<int>() << "  " << n["node"].get<std::string>() << ": "
          << (n["ran"].get<bool>() ? std::string("ran") : "waits for " + std::to_string(n["waits_for"].get<int64_t>()))
          << "\n";
    out << "messages in flight: " << j["in_flight"].size() << "\n";
    out << "gradients in the context: " << j["gradients_in_context"].size() << "\n";
  }
  return out.str();
}

}  // namespace ddpscope::gui
