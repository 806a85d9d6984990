#include "lesson.h"

#include "causal_order.h"
#include "lesson_kind.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace ddpscope::gui {
namespace {

using probes::Kind;

// The function name of distributed autograd's gradient messages (engine/dist_autograd).
constexpr const char* kGradients = "_ddpscope.dist_backward";

std::string worker(int rank) { return "worker " + std::to_string(rank); }

std::string us(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f us", v);
  return buf;
}

// "SendRpcBackward (message 0:1)" for a joint, the op otherwise.
std::string nodeName(const GraphData& g, int node) {
  if (node < 0) return "a node";
  const GraphNode& n = g.nodes[static_cast<size_t>(node)];
  if (n.msg_id >= 0) return n.op + " (message " + formatGlobalId(n.msg_id) + ")";
  return n.op;
}

const char* wireKindName(int kind) {
  switch (kind) {
    case 1: return "call";
    case 2: return "answer";
    case 3: return "error";
    default: return "RRef message";
  }
}

// The pass of context `ctx_id` to replay: `pass`, or its first recorded one (-1: none).
int64_t findPass(probes::RunStoreReader& run, int64_t ctx_id, int64_t pass) {
  for (const auto& c : listDistGraphs(run))
    if (c.ctx_id == ctx_id && (pass < 0 || c.pass == pass)) return c.pass;
  return pass;
}

// The lesson ends with the pass (the last share's end) and the context's release:
// calls made in the context after its backward are not part of the algorithm.
int64_t passEnd(const std::vector<probes::SpanRow>& rows, int64_t ctx_id, int64_t pass) {
  int64_t end = -1;
  for (const auto& s : rows) {
    if (s.kind == Kind::DistBackward && s.ctx_id == ctx_id && (pass < 0 || s.msg_id == pass))
      end = std::max(end, s.t_end_ns);
  }
  return end;
}

// A distributed autograd pass's spans as lesson steps, on the pass's graph.
class DistStepReader {
 public:
  explicit DistStepReader(const GraphData& graph) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const GraphNode& n = graph.nodes[i];
      by_seq_[{n.rank, n.sequence_nr}] = static_cast<int>(i);
      if (n.msg_id >= 0) by_function_[{n.rank, n.msg_id}] = static_cast<int>(i);
    }
  }

  // False: the span is no step of the lesson.
  bool toStep(const probes::SpanRow& s, bool after_pass, LessonStep& st) const {
    st.t_ns = s.t_begin_ns;
    st.rank = s.rank;
    st.peer = static_cast<int>(s.peer);
    switch (s.kind) {
      case Kind::DistContext:
        st.kind = s.name == "context.create" ? StepKind::ContextCreated : StepKind::ContextReleased;
        return true;
      case Kind::DistFunction:
        if (after_pass) return false;  // recorded by calls made after the backward
        st.msg_id = s.msg_id;
        st.name = s.name;
        st.kind = s.name == "smart.ask"      ? StepKind::SmartAsk
                  : s.name == "smart.active" ? StepKind::SmartActive
                                             : StepKind::FunctionRecorded;
        // The asked worker's send function, or this worker's own.
        st.node = nodeOf(by_function_, st.kind == StepKind::SmartAsk ? st.peer : s.rank, s.msg_id);
        return true;
      case Kind::RpcSend:
      case Kind::RpcRecv:
        // The answers to gradient messages close the pass; other calls after it are not
        // part of the algorithm.
        if (after_pass && s.name != kGradients) return false;
        st.kind = s.kind == Kind::RpcSend ? StepKind::MessageSent : StepKind::MessageArrived;
        st.msg_id = s.msg_id;
        st.bytes = s.bytes;
        st.name = s.name;
        st.wire_kind = static_cast<int>(s.param);
        return true;
      case Kind::AutogradNode:
        st.kind = StepKind::NodeRuns;
        st.node = nodeOf(by_seq_, s.rank, s.seq);
        st.duration_us = (s.t_end_ns - s.t_begin_ns) / 1e3;
        return st.node >= 0;  // not: a pass whose graph was not recorded
      case Kind::Dependency:
        st.kind = StepKind::CountFalls;
        st.node = nodeOf(by_seq_, s.rank, s.seq);
        st.count_left = s.param;
        return st.node >= 0;
      default: return false;
    }
  }

 private:
  using NodeMap = std::map<std::pair<int, int64_t>, int>;
  static int nodeOf(const NodeMap& map, int rank, int64_t key) {
    const auto it = map.find({rank, key});
    return it == map.end() ? -1 : it->second;
  }
  NodeMap by_seq_;       // (rank, sequence_nr) -> node
  NodeMap by_function_;  // (rank, autograd id) -> send/recv node
};

// A run that failed (FAST mode on an unused RPC) ends on its error.
void addFailureVerdict(probes::RunStoreReader& run, Lesson& l) {
  const probes::RunRow r = run.run();
  if (l.steps.empty() || r.status != "failed") return;
  l.verdict.push_back("The job failed: " + r.message);
  LessonStep v;
  v.kind = StepKind::Verdict;
  v.rank = r.failed_rank >= 0 ? r.failed_rank : 0;
  v.t_ns = l.steps.back().t_ns;
  l.steps.push_back(v);
}

// A message's time on the way, on its arrival.
void timeMessages(Lesson& l) {
  std::map<std::pair<int64_t, int>, int64_t> sent_at;
  for (auto& st : l.steps) {
    if (st.kind == StepKind::MessageSent) sent_at[{st.msg_id, st.wire_kind}] = st.t_ns;
    if (st.kind == StepKind::MessageArrived) {
      const auto it = sent_at.find({st.msg_id, st.wire_kind});
      if (it != sent_at.end()) st.duration_us = (st.t_ns - it->second) / 1e3;
    }
  }
}

}  // namespace

int64_t skewOf(const ClockSkew& skew, int rank) {
  for (const auto& [r, ns] : skew)
    if (r == rank) return ns;
  return 0;
}

std::string concurrentText() {
  return "This happens at the same time as the step before: neither waits for the other.";
}

void orderByCausality(std::vector<LessonStep>& steps, const std::vector<std::vector<size_t>>& causes) {
  std::vector<CausalStep> causal(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    causal[i] = {steps[i].rank, steps[i].t_ns, i < causes.size() ? causes[i] : std::vector<size_t>{}};
  const CausalOrder order = causalOrder(causal);
  std::vector<LessonStep> sorted;
  sorted.reserve(steps.size());
  for (size_t k = 0; k < order.order.size(); ++k) {
    sorted.push_back(std::move(steps[order.order[k]]));
    sorted.back().concurrent = order.concurrent_with_previous[k];
  }
  steps = std::move(sorted);
}

namespace {

// What each step waited for on another worker: a message's arrival, its send (by RPC
// message id and kind: a call and its answer share the id); a SMART activation, the ask.
std::vector<std::vector<size_t>> messageCauses(const std::vector<LessonStep>& steps) {
  std::map<std::tuple<int64_t, int>, size_t> sent;
  std::map<std::pair<int, int64_t>, size_t> asked;  // (asked worker, autograd id) -> the ask
  for (size_t i = 0; i < steps.size(); ++i) {
    const LessonStep& st = steps[i];
    if (st.kind == StepKind::MessageSent) sent.try_emplace({st.msg_id, st.wire_kind}, i);
    if (st.kind == StepKind::SmartAsk) asked.try_emplace({st.peer, st.msg_id}, i);
  }
  std::vector<std::vector<size_t>> causes(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const LessonStep& st = steps[i];
    if (st.kind == StepKind::MessageArrived) {
      if (const auto it = sent.find({st.msg_id, st.wire_kind}); it != sent.end()) causes[i].push_back(it->second);
    } else if (st.kind == StepKind::SmartActive) {
      if (const auto it = asked.find({st.rank, st.msg_id}); it != asked.end()) causes[i].push_back(it->second);
    }
  }
  return causes;
}

}  // namespace

Lesson loadLesson(probes::RunStoreReader& run, int64_t ctx_id, int64_t pass, const ClockSkew& skew) {
  Lesson l;
  l.ctx_id = ctx_id;
  l.pass = pass = findPass(run, ctx_id, pass);
  if (pass >= 0) l.graph = loadDistGraph(run, ctx_id, pass);
  const auto rows = run.spans({.kinds = {Kind::DistContext, Kind::DistFunction, Kind::RpcSend, Kind::RpcRecv,
                                         Kind::AutogradNode, Kind::Dependency, Kind::DistBackward}});
  const int64_t end = passEnd(rows, ctx_id, pass);
  const DistStepReader reader(l.graph);
  for (const auto& s : rows) {
    if (s.ctx_id != ctx_id || s.kind == Kind::DistBackward) continue;
    LessonStep st;
    if (reader.toStep(s, end >= 0 && s.t_begin_ns > end, st)) {
      st.t_ns += skewOf(skew, st.rank);
      l.steps.push_back(std::move(st));
    }
  }
  // Happens-before, then clocks: a message arrives after it was sent, whatever the
  // workers' clocks say.
  orderByCausality(l.steps, messageCauses(l.steps));
  l.kind = &autogradLessonKind();
  addFailureVerdict(run, l);
  timeMessages(l);
  return l;
}

namespace {

// A DDP run records no dependency events (the local engine's counts), but a node runs
// only once its count is 0, and it then hands a gradient to each next node.
void countDownChildren(const GraphData& graph, int node, LessonState& s) {
  s.counters[static_cast<size_t>(node)] = 0;
  for (const GraphEdge& e : graph.edges) {
    if (e.src == graph.nodes[static_cast<size_t>(node)].id) {
      const auto child = static_cast<size_t>(e.dst);
      if (child < s.counters.size() && s.counters[child] > 0) --s.counters[child];
    }
  }
}

// A new iteration: its buckets (rebuilt ones from iteration 2), all empty; its nodes
// not run yet (a DDP lesson's graph is iteration 1's).
void startIteration(const Lesson& l, const LessonStep& st, LessonState& s) {
  s.generation = std::min(st.bucket, static_cast<int>(l.layout.generations.size()) - 1);
  s.buckets.clear();
  for (const auto& params : l.layout.generations[static_cast<size_t>(s.generation)]) {
    BucketFill b;
    b.params_total = static_cast<int>(params.size());
    if (!l.layout.owners.empty()) b.params_owned = 0;
    for (int p : params) {
      b.bytes_total += l.layout.param_bytes[static_cast<size_t>(p)];
      if (!l.layout.owners.empty() && l.layout.owners[static_cast<size_t>(p)] == l.rank) ++b.params_owned;
    }
    s.buckets.push_back(b);
  }
  s.broadcast = false;
  for (size_t k = 0; k < l.graph.nodes.size(); ++k) {
    s.counters[k] = l.graph.nodes[k].deps;
    s.executed[k] = false;
  }
  s.accumulated.clear();
  s.released.clear();
}

void applyBucketStep(const Lesson& l, const LessonStep& st, LessonState& s) {
  if (st.bucket < 0 || st.bucket >= static_cast<int>(s.buckets.size())) return;
  BucketFill& b = s.buckets[static_cast<size_t>(st.bucket)];
  switch (st.kind) {
    case StepKind::GradReady:
      ++b.params_ready;
      b.bytes_ready += l.layout.param_bytes[static_cast<size_t>(st.param)];
      break;
    case StepKind::BucketReady: b.phase = BucketFill::Phase::Ready; break;
    case StepKind::AllreduceStarts: b.phase = BucketFill::Phase::Reducing; break;
    case StepKind::AllreduceEnds: b.phase = BucketFill::Phase::Reduced; break;
    default: break;
  }
}

void applyStep(const Lesson& l, size_t i, LessonState& s) {
  const LessonStep& st = l.steps[i];
  switch (st.kind) {
    case StepKind::NodeRuns:
      if (st.node < 0) break;
      s.executed[static_cast<size_t>(st.node)] = true;
      if (l.ddp) countDownChildren(l.graph, st.node, s);
      break;
    case StepKind::CountFalls:
      s.counters[static_cast<size_t>(st.node)] = st.count_left;
      // A leaf's gradient goes into the context as soon as it is complete.
      if (st.count_left == 0 && l.graph.nodes[static_cast<size_t>(st.node)].kind == "accumulate_grad") {
        s.executed[static_cast<size_t>(st.node)] = true;
        s.accumulated.push_back(st.node);
      }
      break;
    case StepKind::MessageSent: s.in_flight.push_back(i); break;
    case StepKind::MessageArrived: {
      const auto it = std::find_if(s.in_flight.begin(), s.in_flight.end(), [&](size_t k) {
        return l.steps[k].msg_id == st.msg_id && l.steps[k].wire_kind == st.wire_kind;
      });
      if (it != s.in_flight.end()) s.in_flight.erase(it);
      break;
    }
    case StepKind::SmartActive:
      if (st.node >= 0) s.active[static_cast<size_t>(st.node)] = true;
      break;
    case StepKind::IterationStarts: startIteration(l, st, s); break;
    case StepKind::GradReady:
    case StepKind::BucketReady:
    case StepKind::AllreduceStarts:
    case StepKind::AllreduceEnds: applyBucketStep(l, st, s); break;
    case StepKind::ShardStep:
      for (size_t b = 0; b < s.buckets.size(); ++b)
        if (st.bucket < 0 || static_cast<int>(b) == st.bucket) s.buckets[b].stepped = true;
      break;
    case StepKind::ParamsBroadcast: s.broadcast = true; break;
    case StepKind::ContextReleased:
      // The worker's context goes, and the gradients it held with it.
      std::erase_if(s.accumulated, [&](int n) { return l.graph.nodes[static_cast<size_t>(n)].rank == st.rank; });
      s.released.push_back(st.rank);
      break;
    default: break;
  }
}

// Running: the latest node step, while the latest step falls within its run.
int runningNode(const std::vector<LessonStep>& steps, size_t applied) {
  if (applied == 0) return -1;
  const int64_t now = steps[applied - 1].t_ns;
  for (size_t i = applied; i-- > 0;) {
    const LessonStep& st = steps[i];
    if (st.kind != StepKind::NodeRuns) continue;
    return now <= st.t_ns + static_cast<int64_t>(st.duration_us * 1e3) ? st.node : -1;
  }
  return -1;
}

}  // namespace

LessonState replayEvents(const Lesson& l, size_t applied) {
  LessonState s;
  const size_t n = l.graph.nodes.size();
  s.counters.resize(n);
  for (size_t i = 0; i < n; ++i)
    s.counters[i] = l.graph.nodes[i].deps;
  s.executed.assign(n, false);
  s.active.assign(n, false);
  applied = std::min(applied, l.steps.size());
  for (size_t i = 0; i < applied; ++i)
    applyStep(l, i, s);
  s.running = runningNode(l.steps, applied);
  return s;
}

LessonState Lesson::stateAfter(size_t applied) const {
  return kindOf(*this).stateAfter(*this, std::min(applied, steps.size()));
}

SequenceData lessonSequence(const Lesson& l, size_t applied) {
  SequenceData d;
  if (l.steps.empty()) return d;
  d.begin_ns = l.steps.front().t_ns;
  d.end_ns = l.steps.back().t_ns;
  std::map<std::pair<int64_t, int>, size_t> open;  // (msg id, wire kind) -> arrow
  std::map<std::string, int32_t> names;
  auto intern = [&](const std::string& s) {
    auto [it, inserted] = names.try_emplace(s, static_cast<int32_t>(d.names.size()));
    if (inserted) d.names.push_back(s);
    return it->second;
  };
  for (const LessonStep& st : l.steps)
    d.workers = std::max({d.workers, st.rank + 1, st.peer + 1});
  applied = std::min(applied, l.steps.size());
  for (size_t i = 0; i < applied; ++i) {
    const LessonStep& st = l.steps[i];
    if (st.kind == StepKind::MessageSent) {
      const std::string wire = probes::rpc_message_kind_name(st.wire_kind);
      SequenceArrow a;
      a.t_send_ns = st.t_ns;
      a.msg_id = st.msg_id;
      a.ctx_id = l.ctx_id;
      a.bytes = st.bytes;
      a.src = st.rank;
      a.dst = st.peer;
      a.kind = classifyMessage(wire, st.name);
      a.name = intern(st.name);
      a.wire_kind = intern(wire);
      open[{st.msg_id, st.wire_kind}] = d.arrows.size();
      d.arrows.push_back(a);
    } else if (st.kind == StepKind::MessageArrived) {
      const auto it = open.find({st.msg_id, st.wire_kind});
      if (it == open.end()) continue;
      SequenceArrow& a = d.arrows[it->second];
      a.t_recv_ns = st.t_ns;
      d.longest_ns = std::max(d.longest_ns, a.t_recv_ns - a.t_send_ns);
      open.erase(it);
    }
  }
  d.in_flight = static_cast<int64_t>(open.size());
  // In flight: drawn to the right edge, so the window must reach back to their sends.
  if (!open.empty()) d.longest_ns = d.end_ns - d.begin_ns;
  return d;
}

size_t Lesson::nextNodeStep(size_t from) const {
  for (size_t i = from; i < steps.size(); ++i)
    if (steps[i].kind == StepKind::NodeRuns) return i;
  return steps.size();
}

namespace {

std::string explainMessageSent(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string who = worker(st.rank);

  const std::string id = formatGlobalId(st.msg_id);
  const std::string size = std::to_string(st.bytes) + " B";
  if (st.name == kGradients && st.wire_kind == 1) {
    return who + " sends gradients to " + worker(st.peer) + " as message " + id + " (" + size + ")" +
           ". They go to the send function whose recv function just ran.";
  }
  if (st.name == kGradients) {
    return who + " answers gradient message " + id +
           ": its part of the pass, and the parts it started downstream, are done.";
  }
  return who + " sends the " + wireKindName(st.wire_kind) + " of '" + st.name + "' to " + worker(st.peer) +
         " as message " + id + " (" + size + ").";
}

std::string explainMessageArrived(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string who = worker(st.rank);

  std::string s = "Message " + formatGlobalId(st.msg_id) + " (" + wireKindName(st.wire_kind) + " of '" +
                  (st.name == kGradients ? std::string("gradients") : st.name) + "') arrives at " + who;
  if (st.duration_us >= 0) s += " after " + us(st.duration_us);
  s += ".";
  if (st.name == kGradients && st.wire_kind == 1) {
    // FAST mode: the first gradients a worker hears of in a pass start its part;
    // later ones only queue behind it.
    const bool first =
        std::none_of(l.steps.begin(), l.steps.begin() + static_cast<std::ptrdiff_t>(i),
                     [&](const LessonStep& o) { return o.rank == st.rank && o.kind == StepKind::NodeRuns; });
    s += first ? " It is the first " + who + " hears of this pass: it computes its dependencies and runs its part."
               : " " + who + " already runs this pass, so the gradients only queue at their send function.";
  }
  return s;
}

std::string explainNodeRuns(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string who = worker(st.rank);

  const GraphNode& n = l.graph.nodes[static_cast<size_t>(st.node)];
  std::string s = who + " runs " + nodeName(l.graph, st.node) + " (" + us(st.duration_us) + ")";
  if (n.kind == "recv") {
    s += ": it sends its gradient back to " + worker(n.peer) + ".";
  } else if (n.kind == "send") {
    s += ": the gradient from " + worker(n.peer) + " enters " + who + "'s graph here.";
  } else if (n.kind == "graph_root") {
    s += ": backward starts at the loss.";
  } else {
    s += ": all the gradients it waited for have arrived.";
  }
  return s;
}

std::string explainCountFalls(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string who = worker(st.rank);
  const std::string ctx = "context " + formatGlobalId(l.ctx_id);

  const GraphNode& n = l.graph.nodes[static_cast<size_t>(st.node)];
  std::string s = nodeName(l.graph, st.node) + " on " + who + " receives a gradient; its count falls to " +
                  std::to_string(st.count_left);
  if (st.count_left > 0) return s + ": it waits for " + std::to_string(st.count_left) + " more.";
  if (n.kind == "accumulate_grad") return s + ": the gradient is complete and accumulates in " + ctx + ".";
  return s + ": it is ready to run.";
}

}  // namespace

std::string Lesson::explain(size_t i) const {
  if (i >= steps.size()) return {};
  return kindOf(*this).explain(*this, i);
}

namespace {

// A distributed autograd pass: every worker's part of one context's backward.
class AutogradLessonKind final : public LessonKind {
 public:
  const char* name() const override { return "autograd"; }
  const char* view() const override { return "graph"; }
  bool foundIn(probes::RunStoreReader& run) const override { return !listDistGraphs(run).empty(); }
  Lesson load(probes::RunStoreReader& run, int) const override {
    const auto graphs = listDistGraphs(run);
    if (graphs.empty()) return {};
    return loadLesson(run, graphs.front().ctx_id, graphs.front().pass);
  }
  LessonState stateAfter(const Lesson& l, size_t applied) const override { return replayEvents(l, applied); }
  std::string explain(const Lesson& l, size_t i) const override {
    std::string text = l.explainDistributedStep(i);
    if (l.steps[i].concurrent) {
      // Appended in two steps: `" " + concurrentText()` trips GCC 12's false -Wstringop-overflow.
      text += ' ';
      text += concurrentText();
    }
    return text;
  }
  // Only a node the graph draws can be clicked: GraphRoot's step (backward's start, not in
  // the recorded graph) is played, not asked (Predict was stuck there).
  bool asksBefore(const LessonStep& next) const override { return next.kind == StepKind::NodeRuns && next.node >= 0; }
  void describe(const Lesson& l, const LessonState& s, nlohmann::json& j) const override {
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
};

}  // namespace

const LessonKind& autogradLessonKind() {
  static const AutogradLessonKind kind;
  return kind;
}

std::string Lesson::explainDistributedStep(size_t i) const {
  const LessonStep& st = steps[i];
  const std::string who = worker(st.rank);
  const std::string ctx = "context " + formatGlobalId(ctx_id);
  switch (st.kind) {
    case StepKind::ContextCreated:
      return who + " creates " + ctx +
             ". Every send and recv function recorded from now on belongs to it, "
             "and its gradients will collect there, never in .grad.";
    case StepKind::ContextReleased: return who + " releases " + ctx + ": its functions and gradients are freed here.";
    case StepKind::FunctionRecorded:
      if (st.name == "send") {
        return who + " records a send function for message " + formatGlobalId(st.msg_id) + " to " + worker(st.peer) +
               ": in backward, the gradient of what it sent comes back to it.";
      }
      return who + " records a recv function for message " + formatGlobalId(st.msg_id) + " from " + worker(st.peer) +
             ": in backward it sends its gradient back to " + worker(st.peer) + ".";
    case StepKind::MessageSent: return explainMessageSent(*this, i);
    case StepKind::MessageArrived: return explainMessageArrived(*this, i);
    case StepKind::SmartAsk:
      return "SMART: " + who + "'s search from the loss reached a recv function of message " +
             formatGlobalId(st.msg_id) + "; it asks " + worker(st.peer) + " to activate the matching send function.";
    case StepKind::SmartActive:
      return "SMART: " + who + "'s send function of message " + formatGlobalId(st.msg_id) +
             " is on a path to the loss: the pass will wait for its gradient.";
    case StepKind::NodeRuns: return explainNodeRuns(*this, i);
    case StepKind::Verdict: {
      std::string s;
      for (const std::string& v : verdict)
        s += v + " ";
      return s +
             "FAST mode expects a gradient for every send function of the context; SMART mode would have "
             "waited only for those on a path to the loss.";
    }
    case StepKind::CountFalls: return explainCountFalls(*this, i);
    default: break;
  }
  return {};
}

}  // namespace ddpscope::gui
