#include "hang_stacks.h"

#include <algorithm>
#include <map>

#include "ddpscope/plural.h"
#include "ddpscope/printf_string.h"

namespace ddpscope::probes {
namespace {

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A C++ function's name without its parameter list and qualifiers: "ns::Class::step" for
// "ns::Class::step(int) const".
std::string without_parameters(const std::string& name) {
  const size_t close = name.rfind(')');
  if (close == std::string::npos || name.empty() || name.front() == '(') return name;
  int depth = 0;
  for (size_t i = close + 1; i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return i > 0 ? name.substr(0, i) : name;
  }
  return name;
}

// "load_batch at train.py:15"; a native frame without a line: "ns::step in ddpscope-worker".
std::string frame_place(const StackFrame& f) {
  if (f.line <= 0 && f.code.empty()) return detail::concat(without_parameters(f.name), " in ", base_name(f.file));
  return detail::concat(f.name, " at ", base_name(f.file), ":", f.line);
}

// The training thread's stack: the first the rank gave.
const ThreadStack* training_thread(const StackCapture& c) { return c.threads.empty() ? nullptr : &c.threads.front(); }

constexpr const char* kRecordLanguage = "record";

const RankHangState* state_of_rank(const HangReport& report, int rank) {
  for (const auto& st : report.ranks)
    if (st.rank == rank) return &st;
  return nullptr;
}

}  // namespace

int user_frame(const ThreadStack& thread) {
  for (size_t i = 0; i < thread.frames.size(); ++i)
    if (!is_library_frame(thread.frames[i], thread.native)) return static_cast<int>(i);
  return -1;
}

std::string code_position(const ThreadStack& thread, bool with_caller) {
  const int at = user_frame(thread);
  if (at < 0) return {};
  const StackFrame& f = thread.frames[static_cast<size_t>(at)];
  std::string text = frame_place(f);
  if (!f.code.empty()) text += " (`" + f.code + "`)";
  for (size_t i = static_cast<size_t>(at) + 1; with_caller && i < thread.frames.size(); ++i) {
    if (is_library_frame(thread.frames[i], thread.native)) continue;
    text += ", called from " + frame_place(thread.frames[i]);
    break;
  }
  return text;
}

std::vector<StackCapture> latest_stacks(const std::vector<StackCapture>& all) {
  // A capture whose training thread gave no frame (it did not answer in time, a loaded
  // machine or a process going down) says nothing of where the code stood: an earlier one
  // that did is kept over it.
  const auto tells = [](const StackCapture& c) {
    const ThreadStack* t = training_thread(c);
    return t && t->answered && !t->frames.empty();
  };
  std::map<int, const StackCapture*> latest;
  for (const auto& c : all) {
    const StackCapture*& at = latest[c.rank];
    if (!at || (tells(c) && !tells(*at)) || (tells(c) == tells(*at) && c.t_ns >= at->t_ns)) at = &c;
  }
  std::vector<StackCapture> out;
  for (const auto& [rank, c] : latest)
    out.push_back(*c);
  return out;
}

bool stack_is_current(const HangReport& report, const StackCapture& capture) {
  // A flight record's stack is of the collective the finding is about, not of a moment.
  if (capture.language == kRecordLanguage) return true;
  const RankHangState* st = state_of_rank(report, capture.rank);
  // Or taken while the rank waited in the collective it never left (its events after that
  // are the wait's failure).
  return st && (capture.t_ns >= st->last_event_ns || (st->blocked_in && capture.t_ns >= st->blocked_in->started_ns));
}

std::string stacks_sentences(const HangReport& report) {
  std::vector<const StackCapture*> order;  // culprits first, then the others by rank
  for (int culprit : report.culprits)
    for (const auto& c : report.stacks)
      if (c.rank == culprit) order.push_back(&c);
  for (const auto& c : report.stacks)
    if (std::find(report.culprits.begin(), report.culprits.end(), c.rank) == report.culprits.end()) order.push_back(&c);
  std::string text;
  for (const StackCapture* c : order) {
    const ThreadStack* thread = training_thread(*c);
    // A record's frames are already in the flight verdict's words.
    if (!thread || c->language == kRecordLanguage || !stack_is_current(report, *c)) continue;
    if (user_frame(*thread) < 0) continue;
    const RankHangState* st = state_of_rank(report, c->rank);
    const bool culprit = std::find(report.culprits.begin(), report.culprits.end(), c->rank) != report.culprits.end();
    if (!culprit && st && st->blocked_in) {
      text += detail::concat(" Rank ", c->rank, " waits in ", st->blocked_in->op, " #", st->blocked_in->seq,
                             ", called from ", code_position(*thread, false), ".");
      continue;
    }
    text += detail::concat(" Rank ", c->rank, " is in ", code_position(*thread));
    text += c->stalled_ns > 0 ? printf_string(" (its stack, after %.1f s without progress", c->stalled_ns / 1e9)
                              : " (its stack, when " + c->reason;
    // Its last event said where it had been; the stack says where it went on to.
    text += st && !st->blocked_in && !st->last_event.empty() ? "; past its last event above)." : ").";
  }
  return text.empty() ? text : text.substr(1);
}

std::string stack_text(const StackCapture& c, bool all_frames, int64_t run_start_ns) {
  // A run without events has no start to count from (0): the time is then left out.
  std::string out = c.language == kRecordLanguage ? printf_string("rank %d's call of %s:\n", c.rank, c.reason.c_str())
                    : run_start_ns > 0 ? printf_string("rank %d's stack, %.1f s into the run (%s):\n", c.rank,
                                                       (c.t_ns - run_start_ns) / 1e9, c.reason.c_str())
                                       : printf_string("rank %d's stack (%s):\n", c.rank, c.reason.c_str());
  for (size_t t = 0; t < c.threads.size() && (all_frames || t == 0); ++t) {
    const ThreadStack& thread = c.threads[t];
    if (all_frames || c.threads.size() > 1) out += "  thread '" + thread.name + "'\n";
    int hidden = 0;
    for (const StackFrame& f : thread.frames) {
      if (!all_frames && is_library_frame(f, thread.native)) {
        ++hidden;
        continue;
      }
      out +=
          f.line <= 0 && f.code.empty()  // a native frame without line tables: its program
              ? detail::concat("    ", f.name, " in ", f.file, "\n")
              : detail::concat("    ", f.name, " at ", f.file, ":", f.line, f.code.empty() ? "" : "  " + f.code, "\n");
    }
    if (!thread.answered) out += "    (did not answer: the thread blocks the signal that asks for its stack)\n";
    if (hidden > 0) out += "    (" + count_of(hidden, "frame") + " of libraries: hang --all-frames lists them)\n";
    if (thread.omitted > 0) out += "    (" + count_of(thread.omitted, "outer frame") + " not recorded)\n";
  }
  if (!all_frames && c.threads.size() > 1)
    out += "  (" + count_of(static_cast<int64_t>(c.threads.size()) - 1, "more thread") +
           ": hang --all-frames lists them)\n";
  return out;
}

nlohmann::ordered_json stacks_json(const HangReport& report) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& c : report.stacks) {
    nlohmann::ordered_json threads = nlohmann::ordered_json::array();
    for (const auto& t : c.threads) {
      nlohmann::ordered_json frames = nlohmann::ordered_json::array();
      for (const auto& f : t.frames)
        frames.push_back({{"function", f.name},
                          {"file", f.file},
                          {"line", f.line},
                          {"code", f.code},
                          {"library", is_library_frame(f, t.native)}});
      threads.push_back(
          {{"tid", t.tid}, {"name", t.name}, {"frames", frames}, {"omitted", t.omitted}, {"answered", t.answered}});
    }
    const ThreadStack* training = training_thread(c);
    out.push_back({{"rank", c.rank},
                   {"t_ns", c.t_ns},
                   {"reason", c.reason},
                   {"language", c.language},
                   {"stalled_ms", c.stalled_ns / 1e6},
                   {"iteration", c.iteration},
                   {"current", stack_is_current(report, c)},
                   {"where", training ? code_position(*training) : std::string()},
                   {"threads", threads}});
  }
  return out;
}

void add_flight_record_stacks(HangReport& report) {
  for (const GroupFinding& g : report.flight.groups) {
    if (g.verdict.empty()) continue;
    for (const auto& [rank, call] : g.calls) {
      if (call.frames.empty()) continue;
      const bool has_own = std::any_of(report.stacks.begin(), report.stacks.end(),
                                       [rank = rank](const StackCapture& c) { return c.rank == rank; });
      if (has_own) continue;
      StackCapture capture;
      capture.rank = rank;
      capture.t_ns = call.t_started_ns > 0 ? call.t_started_ns : call.t_created_ns;
      capture.language = kRecordLanguage;
      capture.reason = detail::concat(call.op, " #", call.is_p2p() ? call.p2p_seq : call.collective_seq, " in group '",
                                      g.group, "', as its flight record keeps it");
      ThreadStack thread;
      thread.name = "the collective's caller";
      thread.frames = call.frames;
      capture.threads.push_back(std::move(thread));
      report.stacks.push_back(std::move(capture));
    }
  }
  std::sort(report.stacks.begin(), report.stacks.end(),
            [](const StackCapture& a, const StackCapture& b) { return a.rank < b.rank; });
}

}  // namespace ddpscope::probes
