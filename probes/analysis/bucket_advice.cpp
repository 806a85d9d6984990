#include "bucket_advice.h"

#include <algorithm>
#include <sstream>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "bucket_replay.h"
#include "overlap_analysis.h"
#include "ddpscope/bucket_rule.h"
#include "ddpscope/error.h"
#include "ddpscope/plural.h"

namespace ddpscope::probes {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Op {
  int64_t iteration = 0;
  double begin = 0, end = 0;  // absolute ns
  int64_t bytes = 0;
};

// What one rank recorded, gathered in one pass over its spans (times in absolute ns).
struct RankSpans {
  std::map<int64_t, int64_t> param_bytes;  // the latest generation's parameters
  std::map<int64_t, double> backward_begin, backward_end, iter_begin, iter_end, finalize_begin;
  std::vector<Op> ops;
  std::map<int64_t, std::vector<std::pair<double, int64_t>>> ready;  // (time, parameter) per iteration
  std::map<int64_t, double> last_bucket_end;                         // the latest bucket allreduce end per iteration
  struct BucketOp {
    double begin = 0, end = 0;
    int64_t bucket = -1;
  };
  std::map<int64_t, std::vector<BucketOp>> bucket_ops;                        // per iteration
  std::map<int64_t, std::vector<std::pair<double, double>>> optimizer_spans;  // (begin, end) per iteration
  double sweep_begin = -1, sweep_end = -1;                                    // train --measure-allreduce's marks

  bool in_sweep(const Op& op) const {
    return sweep_begin >= 0 && op.begin >= sweep_begin && (sweep_end < 0 || op.begin <= sweep_end);
  }
  double compute_end(int64_t it) const {
    const auto f = finalize_begin.find(it);
    return f != finalize_begin.end() ? f->second : backward_end.at(it);
  }
};

// Each gradient's and bucket's ready time on the last rank to have it (the store's times
// are on one clock): a rank that runs behind holds every rank's allreduce of that bucket back.
struct ReadyEverywhere {
  std::map<std::pair<int64_t, int64_t>, double> param;   // (iteration, parameter) -> time
  std::map<std::pair<int64_t, int64_t>, double> bucket;  // (iteration, bucket) -> time
};

using Iterations = std::map<int64_t, IterationInputs>;

void read_recorded_settings(RunStoreReader& run, BucketAdvice& a) {
  a.recorded_cap_mb = 25;
  try {
    const auto config = nlohmann::json::parse(run.run().config_json);
    a.recorded_cap_mb = config.value(run_settings::kBucketCapMb, 25.0);
    a.first_bucket_cap_mb = config.value(run_settings::kFirstBucketCapMb, 1.0);
    a.recorded_fused = config.value(run_settings::kFusedOptimizer, false);
  } catch (const nlohmann::json::exception&) {
  }
  const RunRow row = run.run();
  a.torch = row.model.rfind("torch", 0) == 0 || row.backend == "torch";
  a.zero = !run.zero_shards(a.rank).empty();
  if (a.zero) {
    a.notes.push_back(
        "this run used ZeRO: the optimizer step is ZeRO's (a shard step and the parameters' broadcasts, "
        "taken as measured), and the fused optimizer does not combine with it");
  }
}

RankSpans collect_rank_spans(RunStoreReader& run, int rank) {
  RankSpans r;
  for (const ParamRow& p : run.params(rank))
    r.param_bytes[p.index] = p.numel * dtype_name_bytes(p.dtype);
  const std::vector<std::string> names = run.names();
  run.for_each_span(
      [&](const CompactSpan& s) {
        const auto b = static_cast<double>(s.t_begin_ns), e = static_cast<double>(s.t_end_ns);
        switch (s.kind) {
          case Kind::Iteration: r.iter_begin[s.iteration] = b, r.iter_end[s.iteration] = e; break;
          case Kind::Backward: r.backward_begin[s.iteration] = b, r.backward_end[s.iteration] = e; break;
          case Kind::Finalize: r.finalize_begin[s.iteration] = b; break;
          case Kind::GradReady:
            if (r.param_bytes.count(s.param)) r.ready[s.iteration].emplace_back(b, s.param);
            break;
          case Kind::Allreduce:
            r.last_bucket_end[s.iteration] = std::max(r.last_bucket_end[s.iteration], e);
            r.bucket_ops[s.iteration].push_back({b, e, s.bucket});
            break;
          case Kind::PgOp:
            if (s.bytes >= 0) r.ops.push_back({s.iteration, b, e, s.bytes});
            break;
          case Kind::Optimizer: r.optimizer_spans[s.iteration].emplace_back(b, e); break;
          case Kind::Mark:
            if (s.name_id >= 0 && static_cast<size_t>(s.name_id) < names.size()) {
              if (names[s.name_id] == "allreduce sweep") r.sweep_begin = b;
              if (names[s.name_id] == "allreduce sweep end") r.sweep_end = b;
            }
            break;
          default: break;
        }
      },
      {Kind::Iteration, Kind::Backward, Kind::Finalize, Kind::GradReady, Kind::Allreduce, Kind::PgOp, Kind::Mark,
       Kind::Optimizer},
      rank);
  return r;
}

ReadyEverywhere collect_ready_everywhere(RunStoreReader& run, const RankSpans& r, int warmup) {
  ReadyEverywhere everywhere;
  run.for_each_span(
      [&](const CompactSpan& s) {
        if (s.iteration <= warmup || !r.ready.count(s.iteration)) return;
        double& t = s.kind == Kind::GradReady ? everywhere.param[{s.iteration, s.param}]
                                              : everywhere.bucket[{s.iteration, s.bucket}];
        t = std::max(t, static_cast<double>(s.t_begin_ns));
      },
      {Kind::GradReady, Kind::BucketReady});
  return everywhere;
}

IterationInputs iteration_inputs(const RankSpans& r, const ReadyEverywhere& everywhere, int64_t it,
                                 std::vector<std::pair<double, int64_t>> ready) {
  IterationInputs in;
  in.iteration = it;
  const double b0 = r.backward_begin.at(it), backward_end = r.backward_end.at(it);
  const double compute_end = r.compute_end(it);
  const auto last = r.last_bucket_end.find(it);
  const double last_bucket_end = last != r.last_bucket_end.end() ? last->second : 0;
  const auto iter_end = r.iter_end.at(it), iter_begin = r.iter_begin.at(it);
  in.pre_ns = b0 - iter_begin;
  in.compute_end = compute_end - b0;
  in.tail_ns = std::max(0.0, iter_end - backward_end);
  in.writeback_ns = std::max(0.0, backward_end - std::max(compute_end, last_bucket_end));
  in.measured_ns = iter_end - iter_begin;
  if (const auto spans = r.optimizer_spans.find(it); spans != r.optimizer_spans.end()) {
    for (const auto& [ob, oe] : spans->second) {
      in.optimizer_ns += oe - ob;
      if (ob >= backward_end)
        in.optimizer_in_tail_ns += oe - ob;
      else if (oe > std::max(compute_end, last_bucket_end))
        in.optimizer_in_writeback_ns += oe - std::max({ob, compute_end, last_bucket_end});
    }
  }
  std::sort(ready.begin(), ready.end());
  for (const auto& [t, param] : ready) {
    const auto all = everywhere.param.find({it, param});
    const double t_all = all != everywhere.param.end() ? std::max(t, all->second) : t;
    in.ready.push_back({r.param_bytes.at(param), t - b0, t_all - b0, 0});
  }
  return in;
}

Iterations collect_iterations(const RankSpans& r, const ReadyEverywhere& everywhere, int warmup) {
  Iterations its;
  for (const auto& [it, ready] : r.ready) {
    if (it <= warmup || !r.backward_begin.count(it) || !r.iter_begin.count(it) || ready.empty()) continue;
    its[it] = iteration_inputs(r, everywhere, it, ready);
  }
  return its;
}

// The dispatch delay: each bucket allreduce's start after the later of its bucket being
// ready everywhere and the previous allreduce's end.
void measure_dispatch(const RankSpans& r, const ReadyEverywhere& everywhere, const Iterations& its,
                      AllreduceCost& cost) {
  std::vector<double> dispatch;
  for (auto list : r.bucket_ops) {
    if (!its.count(list.first)) continue;
    auto& ops = list.second;
    std::sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.begin < y.begin; });
    double previous_end = 0;
    for (const auto& op : ops) {
      const auto ready = everywhere.bucket.find({list.first, op.bucket});
      if (ready != everywhere.bucket.end()) {
        const double delay = op.begin - std::max(ready->second, previous_end);
        if (delay >= 0) dispatch.push_back(delay);
      }
      previous_end = op.end;
    }
  }
  cost.dispatch_samples = static_cast<int>(dispatch.size());
  cost.dispatch_ns = median(dispatch);
}

// Per size the median of the sweep's timed repeats (the first pays first-use costs). Not
// the fastest: on a shared link a large transfer's time varies by 20% and more (16 MiB at
// 2 Gbit/s: 70-84 ms), and training meets the typical case, not the best one.
void read_sweep(const RankSpans& r, AllreduceCost& cost) {
  std::map<int64_t, std::vector<double>> sweep;  // bytes -> durations
  for (const Op& op : r.ops)
    if (r.in_sweep(op)) sweep[op.bytes].push_back(op.end - op.begin);
  for (auto& [bytes, d] : sweep) {
    if (d.size() > 1) d.erase(d.begin());
    cost.measured.emplace_back(static_cast<double>(bytes), median(d));
  }
}

// A large op that ran while backward computed: its time beside compute and after it.
struct Contended {
  const Op* op;
  double in_compute, after;
};

bool is_large_training_op(const Op& op, const Iterations& its) {
  return op.bytes > 64 * 1024 && its.count(op.iteration);
}

double compute_end_of(const RankSpans& r, const Iterations& its, int64_t it) {
  return r.backward_begin.at(it) + its.at(it).compute_end;
}

// Training's level against the sweep's, from the ops that ran with no compute beside them.
void fit_training_factor(const RankSpans& r, const Iterations& its, AllreduceCost& cost) {
  // The sweep's largest sizes give the streaming rate; the table gives each size's cost.
  const auto& [b1, t1] = cost.measured[cost.measured.size() - 2];
  const auto& [b2, t2] = cost.measured.back();
  cost.ns_per_byte = std::max(1e-6, (t2 - t1) / (b2 - b1));
  std::vector<double> ratio;
  for (const Op& op : r.ops) {
    if (!is_large_training_op(op, its)) continue;
    const double sweep = cost.sweep_ns(static_cast<double>(op.bytes));
    if (op.begin >= compute_end_of(r, its, op.iteration) && sweep > 0) ratio.push_back((op.end - op.begin) / sweep);
  }
  cost.training_samples = static_cast<int>(ratio.size());
  if (!ratio.empty()) cost.training_factor = std::clamp(median(ratio), 0.25, 4.0);
}

// How much slower communication runs beside backward's compute:
// work = rate * time in compute + time after it, in uncontended ns.
void fit_compute_slowdown(const std::vector<Contended>& contended, BucketAdvice& a) {
  std::vector<double> slowdown;
  for (const Contended& c : contended) {
    const double work = a.cost.cost_ns(static_cast<double>(c.op->bytes));
    if (c.in_compute > 0) slowdown.push_back(std::clamp((work - c.after) / c.in_compute, 0.05, 1.0));
  }
  a.cost.compute_slowdown = slowdown.empty() ? 1.0 : median(slowdown);
  if (a.cost.compute_slowdown <= 0.05 + 1e-9)
    a.notes.push_back(
        "the allreduces beside backward's compute mostly waited for another rank (skew), not for the network "
        "(typical of ranks sharing one host): iteration times hold, communication and overlap are rough");
}

// The cost of an allreduce on this cluster: measured per size by the sweep when the run
// has one, else estimated from the run's own ops.
void measure_allreduce_cost(const RankSpans& r, const Iterations& its, BucketAdvice& a) {
  AllreduceCost& cost = a.cost;
  read_sweep(r, cost);
  std::vector<double> tiny, free_rate;
  for (const Op& op : r.ops)
    if (op.bytes <= 1024 && op.iteration > 0) tiny.push_back(op.end - op.begin);
  cost.fixed_ns = median(tiny);
  const auto rate = [&](const Op& op) {
    return std::max(0.0, op.end - op.begin - cost.fixed_ns) / static_cast<double>(op.bytes);
  };
  std::vector<Contended> contended;
  for (const Op& op : r.ops) {
    if (!is_large_training_op(op, its)) continue;
    const double compute_end = compute_end_of(r, its, op.iteration);
    if (op.begin >= compute_end)
      free_rate.push_back(rate(op));
    else if (op.begin >= r.backward_begin.at(op.iteration))
      contended.push_back({&op, std::min(op.end, compute_end) - op.begin, std::max(0.0, op.end - compute_end)});
  }
  cost.free_samples = static_cast<int>(free_rate.size());
  cost.contended_samples = static_cast<int>(contended.size());
  if (free_rate.empty() && cost.measured.empty()) {
    // Every large op ran beside compute: their rate stands for both.
    for (const Contended& c : contended)
      free_rate.push_back(rate(*c.op));
    a.notes.push_back("every large allreduce ran beside backward's compute: no uncontended rate to compare");
    contended.clear();
  }
  cost.ns_per_byte = median(free_rate);
  if (cost.measured.size() >= 2) {
    fit_training_factor(r, its, cost);
  } else if (cost.free_samples < 3) {
    a.notes.push_back(
        std::string("few allreduces ran without compute beside them, and the run has no measured sweep: the cost "
                    "per byte is rough") +
        (a.torch ? "" : " (record with train --measure-allreduce)"));
  }
  fit_compute_slowdown(contended, a);
  if (cost.free_samples < 3 && cost.measured.size() >= 2)  // without a sweep, said above already
    a.notes.push_back("few allreduces ran without compute beside them: the cost per byte is rough");
}

// The time this rank had an allreduce running in iteration `it`: (start, end) from backward's
// start, merged (a PyTorch job's bucket allreduces run side by side; ours one at a time).
std::vector<std::pair<double, double>> allreduces_of(const RankSpans& r, int64_t it) {
  std::vector<std::pair<double, double>> spans;
  const auto ops = r.bucket_ops.find(it);
  if (ops == r.bucket_ops.end()) return spans;
  std::vector<Interval> running;
  for (const auto& op : ops->second)
    running.push_back({static_cast<int64_t>(op.begin), static_cast<int64_t>(op.end)});
  const double b0 = r.backward_begin.at(it);
  for (const Interval& i : merge_intervals(std::move(running)))
    spans.emplace_back(static_cast<double>(i.begin) - b0, static_cast<double>(i.end) - b0);
  return spans;
}

// A layer's backward: the gap before a gradient and the gradients ready right after it
// (one autograd node's outputs: a Linear's bias and weight come 0.0 ms apart).
struct LayerCompute {
  double bytes = 0, ns = 0;
  double beside = 0;  // the share of ns an allreduce ran beside it
};

std::vector<LayerCompute> layers_of(const IterationInputs& in,
                                    const std::vector<std::pair<double, double>>& allreduces) {
  constexpr double kSameNodeNs = 50e3;
  std::vector<LayerCompute> layers;
  double previous = 0, begin = 0;
  for (const auto& r : in.ready) {
    if (layers.empty() || r.own - previous >= kSameNodeNs) layers.emplace_back(), begin = previous;
    LayerCompute& l = layers.back();
    l.bytes += static_cast<double>(r.bytes);
    l.ns = r.own - begin;
    l.beside = l.ns > 0 ? time_beside(begin, r.own, allreduces) / l.ns : 0;
    previous = std::max(previous, r.own);
  }
  return layers;
}

// Backward's compute speed beside an allreduce: each layer computed with an allreduce
// beside it nearly all its time, in ns per byte, against the layers of about its size
// (a factor of 2) computed with none. Then every gap's compute in ns with nothing beside it.
void fit_compute_rate_beside_comm(const RankSpans& r, Iterations& its, AllreduceCost& cost) {
  constexpr double kShortestNs = 200e3;             // shorter layers time mostly the autograd engine
  std::map<int, std::vector<double>> free_by_size;  // log2(bytes) -> ns per byte
  std::vector<LayerCompute> beside;
  for (const auto& [it, in] : its) {
    for (const LayerCompute& l : layers_of(in, allreduces_of(r, it))) {
      if (l.ns < kShortestNs || l.bytes <= 0) continue;
      if (l.beside <= 0.1) free_by_size[static_cast<int>(std::lround(std::log2(l.bytes)))].push_back(l.ns / l.bytes);
      if (l.beside >= 0.9) beside.push_back(l);
    }
  }
  std::vector<double> ratio;
  for (const LayerCompute& l : beside) {
    const int size = static_cast<int>(std::lround(std::log2(l.bytes)));
    std::vector<double> alike;
    for (int s = size - 1; s <= size + 1; ++s)
      if (const auto f = free_by_size.find(s); f != free_by_size.end())
        alike.insert(alike.end(), f->second.begin(), f->second.end());
    if (!alike.empty()) ratio.push_back(median(alike) / (l.ns / l.bytes));
  }
  cost.compute_pairs = static_cast<int>(ratio.size());
  if (ratio.size() >= 3) cost.compute_rate_beside_comm = std::clamp(median(ratio), 0.2, 1.0);
  for (auto& [it, in] : its)
    set_compute_work(in, allreduces_of(r, it), cost.compute_rate_beside_comm);
}

int64_t mib(double mb) { return std::max<int64_t>(1, static_cast<int64_t>(mb * (1 << 20))); }

Simulated simulate_cap(const IterationInputs& in, const BucketAdvice& a, double cap) {
  return simulate(in, a.cost, mib(std::min(a.first_bucket_cap_mb, cap)), mib(cap));
}

// Anchored on the recorded point: what the simulation misses at the run's own cap (a
// rate beside compute that varies by iteration, hand-offs between the ranks' workers)
// is taken to be the same at every cap, and added to each prediction.
void calibrate(const Iterations& its, double measured_median, BucketAdvice& a) {
  std::vector<double> recorded_simulated;
  for (const auto& [it, in] : its) {
    const Simulated s = simulate_cap(in, a, a.recorded_cap_mb);
    recorded_simulated.push_back(a.recorded_fused ? s.fused_iteration : s.iteration);
  }
  a.calibration_ns = measured_median - median(recorded_simulated);
  if (std::abs(a.calibration_ns) > 0.1 * measured_median)
    a.notes.push_back("the simulation misses the recorded cap's measured iteration by " +
                      std::to_string(static_cast<int>(std::round(100 * std::abs(a.calibration_ns) / measured_median))) +
                      "%: predictions far from that cap are rough");
}

CapPrediction predict_cap(const Iterations& its, const BucketAdvice& a, double cap, double measured_median) {
  std::vector<double> iteration, fused, comm, exposed;
  CapPrediction p;
  for (const auto& [it, in] : its) {
    const Simulated s = simulate_cap(in, a, cap);
    iteration.push_back(s.iteration + a.calibration_ns);
    fused.push_back(s.fused_iteration + a.calibration_ns);
    comm.push_back(s.comm);
    exposed.push_back(s.exposed);
    p.buckets = s.buckets;
  }
  p.cap_mb = cap;
  p.iteration_ms = median(iteration) * 1e-6;
  p.fused_iteration_ms = median(fused) * 1e-6;
  p.comm_ms = median(comm) * 1e-6;
  p.exposed_comm_ms = median(exposed) * 1e-6;
  p.overlap_ratio = p.comm_ms > 0 ? 1 - p.exposed_comm_ms / p.comm_ms : std::nan("");
  p.recorded = cap == a.recorded_cap_mb;
  if (p.recorded) p.measured_ms = measured_median * 1e-6;
  return p;
}

void predict(const Iterations& its, std::vector<double> caps, BucketAdvice& a) {
  if (caps.empty()) caps = {0.25, 0.5, 1, 2, 4, 8, 16, 25, 50, 100};
  if (std::find(caps.begin(), caps.end(), a.recorded_cap_mb) == caps.end()) caps.push_back(a.recorded_cap_mb);
  std::sort(caps.begin(), caps.end());
  std::vector<double> measured;
  for (const auto& [it, in] : its)
    measured.push_back(in.measured_ns);
  const double measured_median = median(measured);
  calibrate(its, measured_median, a);
  for (double cap : caps)
    a.predictions.push_back(predict_cap(its, a, cap, measured_median));
}

void choose_best(BucketAdvice& a) {
  a.best_cap_mb = best_cap(a.predictions, false);
  a.best_fused_cap_mb = best_cap(a.predictions, true);
  double fastest = 1e300, slowest = 0;
  for (const CapPrediction& p : a.predictions) {
    fastest = std::min({fastest, p.iteration_ms, p.fused_iteration_ms});
    slowest = std::max({slowest, p.iteration_ms, p.fused_iteration_ms});
  }
  if (a.predictions.size() > 1 && slowest <= fastest * 1.02)
    a.notes.push_back(
        "every cap, with or without the fused optimizer, predicts within 2% of the fastest: for this run "
        "the cap hardly matters");
}

}  // namespace

// The recorded cap when it predicts within 0.5% of the fastest (no change is worth
// advising: the app named a "best" 1 MiB predicted at 69.7 ms over the run's own 0.1 MiB
// at 69.6), else the largest cap within 0.5% of the fastest. Caps that differ by less
// predict the same time (small caps often tie: every parameter its own bucket), and fewer
// buckets risk less of what the model leaves out. Either way the best never predicts
// slower than the recorded cap.
double best_cap(const std::vector<CapPrediction>& predictions, bool fused) {
  const auto time = [fused](const CapPrediction& p) { return fused ? p.fused_iteration_ms : p.iteration_ms; };
  double fastest = 1e300, cap = 0;
  for (const CapPrediction& p : predictions)
    fastest = std::min(fastest, time(p));
  for (const CapPrediction& p : predictions)
    if (p.recorded && time(p) <= fastest * 1.005) return p.cap_mb;
  for (const CapPrediction& p : predictions)
    if (time(p) <= fastest * 1.005) cap = p.cap_mb;
  return cap;
}

double AllreduceCost::cost_ns(double bytes) const {
  if (measured.size() < 2) return fixed_ns + bytes * ns_per_byte;
  return sweep_ns(bytes) * training_factor;
}

double AllreduceCost::sweep_ns(double bytes) const {
  if (bytes <= measured.front().first) return measured.front().second * std::max(0.25, bytes / measured.front().first);
  for (size_t i = 1; i < measured.size(); ++i) {
    const auto& [b0, t0] = measured[i - 1];
    const auto& [b1, t1] = measured[i];
    if (bytes <= b1) return t0 + (t1 - t0) * (bytes - b0) / (b1 - b0);
  }
  return measured.back().second + (bytes - measured.back().first) * ns_per_byte;
}

namespace {

std::string cap_text(double cap_mb) {
  std::ostringstream out;
  out << cap_mb;
  return out.str();
}

}  // namespace

std::string cap_setting(const BucketAdvice& a, double cap_mb) {
  return a.torch ? "DistributedDataParallel(..., bucket_cap_mb=" + cap_text(cap_mb) + ")"
                 : "train --bucket-cap-mb " + cap_text(cap_mb);
}

std::string fused_cap_setting(const BucketAdvice& a, double cap_mb) {
  return a.torch ? "bucket_cap_mb=" + cap_text(cap_mb) +
                       ", each bucket's parameters stepped once it is reduced (DDP._register_fused_optim)"
                 : "train --bucket-cap-mb " + cap_text(cap_mb) + " --fused-optimizer";
}

std::string fused_variant_name(const BucketAdvice& a) {
  return a.torch ? "with the optimizer stepped per bucket" : "with --fused-optimizer";
}

std::string best_caps_text(const BucketAdvice& a) {
  std::string out = "best cap: " + cap_text(a.best_cap_mb) + " MiB (" + cap_setting(a, a.best_cap_mb) + ")" +
                    (a.best_cap_mb == a.recorded_cap_mb ? ", this run's own: no cap predicts 0.5% faster" : "") + "\n";
  if (!a.zero)
    out += "best cap " + (a.torch ? fused_variant_name(a) : std::string("with the fused optimizer")) + ": " +
           cap_text(a.best_fused_cap_mb) + " MiB (" + fused_cap_setting(a, a.best_fused_cap_mb) + ")\n";
  return out;
}

BucketAdvice advise_buckets(RunStoreReader& run, const std::vector<double>& caps_mb, int rank, int warmup) {
  BucketAdvice a;
  a.rank = rank;
  read_recorded_settings(run, a);
  const RankSpans spans = collect_rank_spans(run, rank);
  const ReadyEverywhere everywhere = collect_ready_everywhere(run, spans, warmup);
  Iterations its = collect_iterations(spans, everywhere, warmup);
  const RunRow row = run.run();
  const bool trace = row.model.find("profiler traces") != std::string::npos;
  DDPSCOPE_CHECK(!its.empty(), "bucket advice needs a DDP training run with more than ", count_of(warmup, "iteration"),
                 " recorded with probes (gradient-ready marks); rank ", rank, " of ", run.path(), " has none",
                 trace ? " (a profiler trace records no gradient-ready marks: run the job under ddpscope-cli torchrun "
                         "or collect for advice)"
                       : "");
  a.iterations = static_cast<int>(its.size());
  measure_dispatch(spans, everywhere, its, a.cost);
  measure_allreduce_cost(spans, its, a);
  fit_compute_rate_beside_comm(spans, its, a.cost);
  predict(its, caps_mb, a);
  choose_best(a);
  return a;
}

}  // namespace ddpscope::probes
