#include "lesson_report.h"

#include <algorithm>
#include <sstream>

#include "lesson_kind.h"
#include "ring_lesson.h"
#include "ddpscope/plural.h"

namespace ddpscope::gui {
std::string lessonKind(const Lesson& l) { return kindOf(l).name(); }

nlohmann::json lessonStepJson(const Lesson& l, size_t applied) {
  applied = std::min(applied, l.steps.size());
  nlohmann::json j = {{"kind", lessonKind(l)}, {"step", applied}, {"steps", l.steps.size()}};
  if (applied > 0) {
    const LessonStep& st = l.steps[applied - 1];
    j["narration"] = l.explain(applied - 1);
    j["concurrent_with_previous"] = st.concurrent;
    j["rank"] = st.rank;
  }
  kindOf(l).describe(l, l.stateAfter(applied), j);
  return j;
}

std::string lessonStepText(const Lesson& l, size_t applied) {
  const nlohmann::json j = lessonStepJson(l, applied);
  std::ostringstream out;
  out << "Step " << j["step"].get<size_t>() << " of " << j["steps"].get<size_t>() << "\n";
  if (j.contains("narration")) out << j["narration"].get<std::string>() << "\n";
  out << "\n";
  if (l.ring) {
    const LessonState s = l.stateAfter(std::min(applied, l.steps.size()));
    for (int r = 0; r < l.ring_ranks; ++r) {
      out << "rank " << r << ":";
      for (int b = 0; b < l.ring_ranks; ++b)
        out << "  block " << b << " = " << ringHoldsText(s.holds[size_t(r)][size_t(b)], l.ring_ranks);
      out << "   (sent " << ddpscope::count_of(s.ring_steps_done[size_t(r)], "step") << ", "
          << s.ring_bytes_sent[size_t(r)] << " B; received " << s.ring_steps_received[size_t(r)] << ")\n";
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
