#include "ddp_lesson.h"

#include "lesson_kind.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "hang_analysis.h"
#include "ddpscope/plural.h"

namespace ddpscope::gui {
namespace {

using probes::Kind;

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// "{layers.6.bias, layers.6.weight, layers.4.bias}" (names without DDP's "module.").
std::string paramList(const DdpLayout& layout, const std::vector<int>& params) {
  std::string s = "{";
  for (size_t i = 0; i < params.size(); ++i) {
    std::string name = layout.param_names[static_cast<size_t>(params[i])];
    if (name.rfind("module.", 0) == 0) name = name.substr(7);
    s += (i ? ", " : "") + name;
  }
  return s + "}";
}

int bucketOf(const DdpLayout& layout, int generation, int param) {
  const auto& buckets = layout.generations[static_cast<size_t>(generation)];
  for (size_t b = 0; b < buckets.size(); ++b)
    if (std::find(buckets[b].begin(), buckets[b].end(), param) != buckets[b].end()) return static_cast<int>(b);
  return -1;
}

// Parameters and buckets: generation 0, and 1 when the reducer rebuilt them.
void readLayout(probes::RunStoreReader& run, int rank, DdpLayout& layout) {
  for (const auto& p : run.params(rank, 0)) {
    if (p.index >= static_cast<int>(layout.param_names.size())) {
      layout.param_names.resize(static_cast<size_t>(p.index) + 1);
      layout.param_bytes.resize(static_cast<size_t>(p.index) + 1);
    }
    layout.param_names[static_cast<size_t>(p.index)] = p.name;
    layout.param_bytes[static_cast<size_t>(p.index)] = p.numel * (p.dtype == "f64" ? 8 : p.dtype == "f32" ? 4 : 2);
  }
  const auto shards = run.zero_shards(rank);
  if (!shards.empty()) {
    layout.owners.assign(layout.param_names.size(), -1);
    for (const auto& s : shards)
      if (s.param >= 0 && s.param < static_cast<int>(layout.owners.size()))
        layout.owners[static_cast<size_t>(s.param)] = s.owner;
  }
  for (const auto& b : run.buckets(rank)) {
    if (b.generation >= static_cast<int>(layout.generations.size()))
      layout.generations.resize(static_cast<size_t>(b.generation) + 1);
    auto& gen = layout.generations[static_cast<size_t>(b.generation)];
    if (b.bucket >= static_cast<int>(gen.size())) gen.resize(static_cast<size_t>(b.bucket) + 1);
    gen[static_cast<size_t>(b.bucket)].assign(b.params.begin(), b.params.end());
  }
}

// Iterations 1 and 2's spans as lesson steps.
class DdpStepReader {
 public:
  DdpStepReader(Lesson& l, const std::vector<probes::SpanRow>& rows) : l_(l) {
    for (size_t i = 0; i < l.graph.nodes.size(); ++i)
      by_seq_[l.graph.nodes[i].sequence_nr] = static_cast<int>(i);
    // The reducer writes its bucket allreduce spans when an iteration completes; one that
    // never completed (a failed run) has only the process group's allreduces, which launch
    // in bucket index order: the k-th of the iteration is bucket k.
    for (const auto& s : rows)
      if (s.kind == Kind::Allreduce) with_bucket_spans_.insert(static_cast<int>(s.iteration));
    // Iteration 2's nodes are iteration 1's graph again, numbered on: matched by the
    // offset between the two iterations' first sequence numbers, checked by name.
    std::map<int, int64_t> first_seq;
    for (const auto& s : rows) {
      if (s.kind == Kind::AutogradNode && (s.iteration == 1 || s.iteration == 2)) {
        auto [it, inserted] = first_seq.try_emplace(static_cast<int>(s.iteration), s.seq);
        if (!inserted) it->second = std::min(it->second, s.seq);
      }
    }
    offset_ = first_seq.count(1) && first_seq.count(2) ? first_seq[2] - first_seq[1] : 0;
  }

  void add(const probes::SpanRow& s) {
    if (s.iteration != 1 && s.iteration != 2) return;
    const int iteration = static_cast<int>(s.iteration);
    const int generation = std::min<int>(iteration - 1, static_cast<int>(l_.layout.generations.size()) - 1);
    LessonStep st;
    st.t_ns = s.t_begin_ns;
    st.rank = l_.rank;
    st.iteration = iteration;
    switch (s.kind) {
      case Kind::Iteration:
        st.kind = StepKind::IterationStarts;
        st.bucket = generation;  // the generation its buckets come from
        break;
      case Kind::AutogradNode: nodeRuns(s, st); break;
      case Kind::GradReady:
        st.kind = StepKind::GradReady;
        st.param = static_cast<int>(s.param);
        if (st.param < 0 || st.param >= static_cast<int>(l_.layout.param_names.size())) return;
        st.bucket = bucketOf(l_.layout, generation, st.param);
        break;
      case Kind::BucketReady:
        st.kind = StepKind::BucketReady;
        st.bucket = static_cast<int>(s.bucket);
        break;
      case Kind::Allreduce: bucketAllreduce(s, st); break;
      case Kind::Finalize:
        st.kind = StepKind::FinalizeStarts;
        st.duration_us = (s.t_end_ns - s.t_begin_ns) / 1e3;
        break;
      case Kind::PgOpStart:
      case Kind::PgOp:
        if (!groupAllreduce(s, generation, st)) return;
        break;
      case Kind::Optimizer:  // ZeRO's shard update; a plain optimizer's step is not a step here
        if (s.name != "zero shard step") return;
        st.kind = StepKind::ShardStep;
        st.bucket = static_cast<int>(s.bucket);
        st.duration_us = (s.t_end_ns - s.t_begin_ns) / 1e3;
        break;
      case Kind::ParamSync:
        st.kind = StepKind::ParamsBroadcast;
        st.bytes = s.bytes;
        st.duration_us = (s.t_end_ns - s.t_begin_ns) / 1e3;
        break;
      default: return;
    }
    l_.steps.push_back(std::move(st));
  }

 private:
  void nodeRuns(const probes::SpanRow& s, LessonStep& st) const {
    st.kind = StepKind::NodeRuns;
    st.name = s.name;
    st.duration_us = (s.t_end_ns - s.t_begin_ns) / 1e3;
    const auto it = by_seq_.find(st.iteration == 1 ? s.seq : s.seq - offset_);
    if (it != by_seq_.end() && l_.graph.nodes[static_cast<size_t>(it->second)].op == s.name) st.node = it->second;
  }

  // Its start is `st`; its end is a step of its own.
  void bucketAllreduce(const probes::SpanRow& s, LessonStep& st) {
    st.kind = StepKind::AllreduceStarts;
    st.bucket = static_cast<int>(s.bucket);
    st.bytes = s.bytes;
    LessonStep end = st;
    end.kind = StepKind::AllreduceEnds;
    end.t_ns = s.t_end_ns;
    end.duration_us = (s.t_end_ns - s.t_begin_ns) / 1e3;
    l_.steps.push_back(end);
  }

  // A process group's allreduce standing for a bucket's in an iteration that never
  // completed. False: not a step.
  bool groupAllreduce(const probes::SpanRow& s, int generation, LessonStep& st) {
    const int iteration = st.iteration;
    if (with_bucket_spans_.count(iteration) || s.name != "allreduce") return false;
    if (s.kind == Kind::PgOpStart) {
      const int k = launched_[iteration]++;
      if (k >= static_cast<int>(l_.layout.generations[static_cast<size_t>(generation)].size())) return false;
      bucket_of_seq_[s.seq] = k;
      st.kind = StepKind::AllreduceStarts;
      st.bucket = k;
      st.bytes = s.bytes;
      return true;
    }
    const auto it = bucket_of_seq_.find(s.seq);
    if (it == bucket_of_seq_.end()) return false;
    st.kind = StepKind::AllreduceEnds;
    st.bucket = it->second;
    st.t_ns = s.t_end_ns;
    st.duration_us = (s.t_end_ns - s.t_begin_ns) / 1e3;
    return true;
  }

  Lesson& l_;
  std::map<int64_t, int> by_seq_;
  std::set<int> with_bucket_spans_;
  std::map<int, int> launched_;           // iteration -> allreduces seen
  std::map<int64_t, int> bucket_of_seq_;  // process-group seq -> bucket
  int64_t offset_ = 0;
};

// An iteration a rank failed inside has no iteration span (it never ended): it starts
// with its first event.
void addUnfinishedIterationStarts(Lesson& l) {
  std::map<int, int64_t> first_event;
  std::set<int> started;
  for (const LessonStep& st : l.steps) {
    if (st.kind == StepKind::IterationStarts) started.insert(st.iteration);
    auto [it, inserted] = first_event.try_emplace(st.iteration, st.t_ns);
    if (!inserted) it->second = std::min(it->second, st.t_ns);
  }
  for (const auto& [iteration, t] : first_event) {
    if (started.count(iteration)) continue;
    LessonStep st;
    st.kind = StepKind::IterationStarts;
    st.rank = l.rank;
    st.iteration = iteration;
    st.t_ns = t;
    st.bucket = std::min<int>(iteration - 1, static_cast<int>(l.layout.generations.size()) - 1);
    l.steps.push_back(st);
  }
}

// A run that did not finish ends on the hang view's verdict.
void addVerdict(probes::RunStoreReader& run, Lesson& l) {
  const probes::RunRow r = run.run();
  if (l.steps.empty() || r.status == "finished" || r.status == "running") return;
  l.verdict.push_back("The job " + r.status + (r.message.empty() ? "." : ": " + r.message));
  // The verdict names the culprit; the finding after it says who waits for whom.
  const auto findings = probes::analyze_hang(run).findings;
  if (!findings.empty()) {
    // The verdict ("Rank 1 failed: <its error>") often quotes the job's message, just
    // said: the lesson said the same sentence twice.
    std::string verdict = findings.front();
    if (const size_t colon = verdict.find(": "); !r.message.empty() && colon != std::string::npos) {
      std::string quoted = verdict.substr(colon + 2);
      while (!quoted.empty() && (quoted.back() == '.' || quoted.back() == ' '))
        quoted.pop_back();
      if (!quoted.empty() && r.message.find(quoted) != std::string::npos)
        verdict = verdict.substr(0, colon) + ", with the error above.";
    }
    std::string text = "The hang view's verdict: " + verdict;
    if (findings.size() > 1) text += " Then: " + findings[1] + ".";
    l.verdict.push_back(text);
  }
  LessonStep v;
  v.kind = StepKind::Verdict;
  v.rank = l.rank;
  v.t_ns = l.steps.back().t_ns;
  v.iteration = l.steps.back().iteration;
  l.steps.push_back(v);
}

}  // namespace

Lesson loadDdpLesson(probes::RunStoreReader& run, int rank) {
  Lesson l;
  l.ddp = true;
  l.kind = &ddpLessonKind();
  l.rank = rank;
  readLayout(run, rank, l.layout);
  if (l.layout.generations.empty()) return l;
  l.graph = loadGraph(run, rank);
  const auto rows =
      run.spans({.kinds = {Kind::Iteration, Kind::AutogradNode, Kind::GradReady, Kind::BucketReady, Kind::Allreduce,
                           Kind::Finalize, Kind::PgOpStart, Kind::PgOp, Kind::Optimizer, Kind::ParamSync},
                 .rank = rank});
  DdpStepReader reader(l, rows);
  for (const auto& s : rows)
    reader.add(s);
  addUnfinishedIterationStarts(l);
  std::stable_sort(l.steps.begin(), l.steps.end(), [](const LessonStep& a, const LessonStep& b) {
    // An iteration starts before anything in it (its span begins with its first child).
    if (a.t_ns != b.t_ns) return a.t_ns < b.t_ns;
    return a.kind == StepKind::IterationStarts && b.kind != StepKind::IterationStarts;
  });
  addVerdict(run, l);
  return l;
}

namespace {

// ZeRO: "rank 0 updates 7 parameters (1.52 MiB) and keeps the optimizer state of those
// only; rank 1 updates 3 (0.50 MiB)".
std::string zeroOwnership(const Lesson& l) {
  std::map<int, std::pair<int, int64_t>> owned;
  for (size_t p = 0; p < l.layout.owners.size(); ++p) {
    ++owned[l.layout.owners[p]].first;
    owned[l.layout.owners[p]].second += l.layout.param_bytes[p];
  }
  std::string s;
  for (const auto& [rank, o] : owned) {
    s += s.empty() ? "With ZeRO, " : "; ";
    s += "rank " + std::to_string(rank) + " updates " + std::to_string(o.first) + " parameters (" + mib(o.second) + ")";
    if (rank == l.rank) s += " and keeps the optimizer state of those only";
  }
  return s + ".";
}

std::vector<int> ownedIn(const Lesson& l, const std::vector<int>& params, bool mine) {
  std::vector<int> out;
  for (int p : params)
    if ((l.layout.owners[static_cast<size_t>(p)] == l.rank) == mine) out.push_back(p);
  return out;
}

std::string explainShardStep(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string rank = "rank " + std::to_string(l.rank);
  const int generation = l.stateAfter(i).generation;
  const auto& buckets = l.layout.generations[static_cast<size_t>(generation)];
  if (st.bucket < 0 || st.bucket >= static_cast<int>(buckets.size())) {
    std::vector<int> all(l.layout.param_names.size());
    for (size_t p = 0; p < all.size(); ++p)
      all[p] = static_cast<int>(p);
    return "Backward and its allreduces are done: " + rank + " steps its shard, " +
           paramList(l.layout, ownedIn(l, all, true)) + ", with the averaged gradients. The other parameters " +
           "are the other ranks' to update.";
  }
  const auto& params = buckets[static_cast<size_t>(st.bucket)];
  const auto mine = ownedIn(l, params, true), theirs = ownedIn(l, params, false);
  const LessonState before = l.stateAfter(i);
  const bool others_reducing = std::any_of(before.buckets.begin(), before.buckets.end(),
                                           [](const BucketFill& b) { return b.phase != BucketFill::Phase::Reduced; });
  std::string s = "Bucket " + std::to_string(st.bucket) + "'s gradients are averaged, so " + rank +
                  " steps its share of it at once (" + std::to_string(static_cast<int>(st.duration_us)) + " us)" +
                  (others_reducing ? ", while other buckets are still reducing: " : ": ") + paramList(l.layout, mine) +
                  ".";
  if (theirs.size() == 1) s += " The bucket's other parameter is updated by its owner.";
  if (theirs.size() > 1)
    s += " The bucket's other " + std::to_string(theirs.size()) + " parameters are updated by their owners.";
  return s;
}

std::string explainParamsBroadcast(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  int64_t mine = 0;
  for (size_t p = 0; p < l.layout.owners.size(); ++p)
    if (l.layout.owners[p] == l.rank) mine += l.layout.param_bytes[p];
  // Overlapped with DDP, each bucket's broadcasts went out from the hook that stepped it:
  // this step is the wait for the last of them.
  const bool from_hooks =
      std::any_of(l.steps.begin(), l.steps.begin() + static_cast<std::ptrdiff_t>(i), [&](const LessonStep& o) {
        return o.iteration == st.iteration && o.kind == StepKind::ShardStep && o.bucket >= 0;
      });
  const std::string sizes = "(" + mib(st.bytes) + " in all, " + mib(mine) + " of it from rank " +
                            std::to_string(l.rank) + "; " + std::to_string(static_cast<int>(st.duration_us)) + " us)";
  const std::string s =
      from_hooks
          ? "Each bucket's parameters went out from their owners as soon as they were stepped; the step ends "
            "when every rank has received the rest " +
                sizes + ". Every rank broadcasts the parameters it updated: "
          : "Every rank broadcasts the parameters it updated and receives the rest from their owners " + sizes + ": ";
  return s +
         "now every rank holds the same parameters, as after a plain optimizer's step. This is the communication "
         "ZeRO adds, at the end of backward. What it saves is memory: each rank keeps only its shard's optimizer "
         "state.";
}

std::string explainIterationStarts(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string rank = "rank " + std::to_string(l.rank);
  const auto& buckets = l.layout.generations[static_cast<size_t>(st.bucket)];
  std::string s = "Iteration " + std::to_string(st.iteration) + " starts on " + rank + ". ";
  s += st.bucket == 0 ? "DDP put the parameters into buckets in reverse order of registration, the order "
                        "backward usually produces their gradients: "
                      : "The buckets were rebuilt in the order the gradients became ready in iteration 1: ";
  for (size_t b = 0; b < buckets.size(); ++b)
    s += (b ? "; " : "") + std::string("bucket ") + std::to_string(b) + " = " + paramList(l.layout, buckets[b]);
  s += ".";
  if (!l.layout.owners.empty() && st.iteration == 1) s += " " + zeroOwnership(l);
  return s;
}

std::string explainGradReady(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const LessonState before = l.stateAfter(i);
  std::string s = "The gradient of " + paramList(l.layout, {st.param}).substr(1);
  s.pop_back();
  s += " is ready (" + mib(l.layout.param_bytes[static_cast<size_t>(st.param)]) + ") and goes into bucket " +
       std::to_string(st.bucket);
  if (st.bucket >= 0 && st.bucket < static_cast<int>(before.buckets.size())) {
    const BucketFill& b = before.buckets[static_cast<size_t>(st.bucket)];
    s += ": " + std::to_string(b.params_ready + 1) + " of " + std::to_string(b.params_total) + " there.";
  } else {
    s += ".";
  }
  return s;
}

std::string explainBucketReady(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const LessonState before = l.stateAfter(i);
  std::string s = "Bucket " + std::to_string(st.bucket) + " is full.";
  for (int b = 0; b < st.bucket && b < static_cast<int>(before.buckets.size()); ++b) {
    if (before.buckets[static_cast<size_t>(b)].phase == BucketFill::Phase::Filling) {
      return s + " But bucket " + std::to_string(b) +
             " is not: allreduces launch in bucket index order, so this one waits for it.";
    }
  }
  return s + " Its allreduce can launch now, while backward goes on.";
}

std::string explainAllreduceStarts(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string rank = "rank " + std::to_string(l.rank);
  const size_t left =
      std::count_if(l.steps.begin() + static_cast<std::ptrdiff_t>(i), l.steps.end(),
                    [&](const LessonStep& o) { return o.iteration == st.iteration && o.kind == StepKind::NodeRuns; });
  std::string s = rank + " launches the allreduce of bucket " + std::to_string(st.bucket) + " (" + mib(st.bytes) + ")";
  s += left > 0 ? ", overlapping backward: " + std::to_string(left) + " autograd nodes still to run."
                : ", after backward ended: this communication is exposed, nothing hides it.";
  // How long it waited once full: the buckets before it go first, one at a time.
  for (size_t k = i; k-- > 0;) {
    const LessonStep& o = l.steps[k];
    if (o.iteration == st.iteration && o.kind == StepKind::BucketReady && o.bucket == st.bucket) {
      const double waited = (st.t_ns - o.t_ns) / 1e3;
      if (waited > 50 && st.bucket > 0) {
        s += " It was full " + std::to_string(static_cast<int>(waited)) + " us earlier and waited for bucket " +
             std::to_string(st.bucket - 1) + "'s allreduce: they run one after another, in bucket index order.";
      }
      break;
    }
  }
  return s;
}

std::string explainFinalize(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string rank = "rank " + std::to_string(l.rank);
  const LessonState before = l.stateAfter(i);
  int reducing = 0;
  for (const BucketFill& b : before.buckets)
    reducing += b.phase != BucketFill::Phase::Reduced;
  return "Backward is done on " + rank + "; finalize waits for " +
         (reducing == 1 ? std::string("the bucket") : "the " + ddpscope::count_of(reducing, "bucket")) +
         " not yet reduced, then writes the averaged gradients back into .grad.";
}

std::string explainVerdict(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string rank = "rank " + std::to_string(l.rank);
  // Which gradients never came on this rank in its last iteration.
  std::set<int> ready;
  for (const LessonStep& o : l.steps)
    if (o.iteration == st.iteration && o.kind == StepKind::GradReady) ready.insert(o.param);
  std::vector<int> missing;
  for (int p = 0; p < static_cast<int>(l.layout.param_names.size()); ++p)
    if (!ready.count(p)) missing.push_back(p);
  std::string s;
  if (!missing.empty()) {
    s = "No gradient ever reached " + paramList(l.layout, missing) + " on " + rank +
        ": the forward did not use them. Without find_unused_parameters DDP never marks them ready, so "
        "their bucket never launches its allreduce, and the buckets after it wait in index order. "
        "The other ranks launch theirs and wait for this one. ";
  }
  for (const std::string& v : l.verdict)
    s += v + (v.empty() || v.back() == '.' ? " " : ". ");
  return s;
}

}  // namespace

std::string explainDdpStep(const Lesson& l, size_t i) {
  const LessonStep& st = l.steps[i];
  const std::string rank = "rank " + std::to_string(l.rank);
  switch (st.kind) {
    case StepKind::IterationStarts: return explainIterationStarts(l, i);
    case StepKind::NodeRuns:
      return rank + " runs " + st.name + " (" + std::to_string(static_cast<int>(st.duration_us)) + " us).";
    case StepKind::GradReady: return explainGradReady(l, i);
    case StepKind::BucketReady: return explainBucketReady(l, i);
    case StepKind::AllreduceStarts: return explainAllreduceStarts(l, i);
    case StepKind::AllreduceEnds:
      return "Bucket " + std::to_string(st.bucket) + "'s allreduce is done (" +
             std::to_string(static_cast<int>(st.duration_us)) + " us): its gradients are averaged over the ranks.";
    case StepKind::FinalizeStarts: return explainFinalize(l, i);
    case StepKind::ShardStep: return explainShardStep(l, i);
    case StepKind::ParamsBroadcast: return explainParamsBroadcast(l, i);
    case StepKind::Verdict: return explainVerdict(l, i);
    default: return {};
  }
}

namespace {

const char* phaseName(BucketFill::Phase p) {
  switch (p) {
    case BucketFill::Phase::Filling: return "filling";
    case BucketFill::Phase::Ready: return "ready";
    case BucketFill::Phase::Reducing: return "reducing";
    case BucketFill::Phase::Reduced: return "reduced";
  }
  return "?";
}

// One rank's DDP iterations: its buckets filling, reducing, and ZeRO's shares.
class DdpLessonKind final : public LessonKind {
 public:
  const char* name() const override { return "ddp"; }
  const char* view() const override { return "buckets"; }
  bool foundIn(probes::RunStoreReader& run) const override {
    return !run.spans({.kinds = {probes::Kind::GradReady}, .limit = 1}).empty();
  }
  Lesson load(probes::RunStoreReader& run, int rank) const override { return loadDdpLesson(run, rank); }
  LessonState stateAfter(const Lesson& l, size_t applied) const override { return replayEvents(l, applied); }
  std::string explain(const Lesson& l, size_t i) const override { return explainDdpStep(l, i); }
  // Only a node the graph draws can be clicked: GraphRoot's step (backward's start, not in
  // the recorded graph) is played, not asked (Predict was stuck there).
  bool asksBefore(const LessonStep& next) const override { return next.kind == StepKind::NodeRuns && next.node >= 0; }
  void describe(const Lesson& l, const LessonState& s, nlohmann::json& j) const override {
    j["rank"] = l.rank;
    j["generation"] = s.generation;
    nlohmann::json buckets = nlohmann::json::array();
    for (const BucketFill& b : s.buckets) {
      nlohmann::json o = {{"params_ready", b.params_ready},
                          {"params_total", b.params_total},
                          {"bytes_ready", b.bytes_ready},
                          {"bytes_total", b.bytes_total},
                          {"phase", phaseName(b.phase)}};
      if (b.params_owned >= 0) o["params_owned"] = b.params_owned, o["stepped"] = b.stepped;
      buckets.push_back(o);
    }
    j["buckets"] = buckets;
  }
};

}  // namespace

const LessonKind& ddpLessonKind() {
  static const DdpLessonKind kind;
  return kind;
}

}  // namespace ddpscope::gui
