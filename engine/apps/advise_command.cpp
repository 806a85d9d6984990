#include "advise_command.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "bucket_advice.h"
#include "ddpscope/plural.h"
#include "json_number.h"
#include "run_store_reader.h"

namespace ddpscope::apps {
namespace {

using probes::best_caps_text;
using probes::BucketAdvice;
using probes::json_number;

void print_json(const BucketAdvice& a) {
  nlohmann::ordered_json out = {{"rank", a.rank},
                                {"iterations", a.iterations},
                                {"recorded_cap_mb", a.recorded_cap_mb},
                                {"first_bucket_cap_mb", a.first_bucket_cap_mb},
                                {"recorded_fused_optimizer", a.recorded_fused},
                                {"best_cap_mb", a.best_cap_mb},
                                {"best_fused_cap_mb", a.best_fused_cap_mb},
                                {"cost",
                                 {{"fixed_ms", a.cost.fixed_ns * 1e-6},
                                  {"mb_per_s", a.cost.ns_per_byte > 0 ? 1e3 / a.cost.ns_per_byte : 0},
                                  {"compute_slowdown", a.cost.compute_slowdown},
                                  {"compute_rate_beside_comm", a.cost.compute_rate_beside_comm},
                                  {"training_factor", a.cost.training_factor},
                                  {"dispatch_ms", a.cost.dispatch_ns * 1e-6},
                                  {"calibration_ms", a.calibration_ns * 1e-6},
                                  {"measured_sizes", a.cost.measured.size()},
                                  {"free_samples", a.cost.free_samples},
                                  {"contended_samples", a.cost.contended_samples},
                                  {"compute_pairs", a.cost.compute_pairs}}},
                                {"notes", a.notes}};
  for (const auto& p : a.predictions) {
    out["predictions"].push_back(
        {{"cap_mb", p.cap_mb},
         {"buckets", p.buckets},
         {"iteration_ms", p.iteration_ms},
         {"fused_iteration_ms", p.fused_iteration_ms},
         {"comm_ms", p.comm_ms},
         {"exposed_comm_ms", p.exposed_comm_ms},
         {"overlap_ratio", json_number(p.overlap_ratio)},
         {"recorded", p.recorded},
         {"measured_ms", p.recorded ? nlohmann::ordered_json(p.measured_ms) : nlohmann::ordered_json()}});
  }
  std::printf("%s\n", out.dump(2).c_str());
}

void print_text(const std::string& path, const BucketAdvice& a) {
  std::printf("Bucket advice for %s (rank %d, %s after the warm-up)\n", path.c_str(), a.rank,
              count_of(a.iterations, "iteration").c_str());
  if (a.cost.measured.size() >= 2) {
    std::printf("allreduce cost on this cluster, measured by the run's sweep (%s):",
                a.torch ? "the job's own" : "train --measure-allreduce");
    for (const auto& [bytes, ns] : a.cost.measured)
      std::printf(" %.0f KiB %.2f ms,", bytes / 1024, ns * 1e-6);
    std::printf(" x%.2f in training (from %d ops with no compute beside them)\n", a.cost.training_factor,
                a.cost.training_samples);
  } else {
    std::printf("allreduce cost on this cluster, from the run's own ops: %.2f ms + %.1f MB/s\n", a.cost.fixed_ns * 1e-6,
                a.cost.ns_per_byte > 0 ? 1e3 / a.cost.ns_per_byte : 0.0);
  }
  std::printf("beside backward's compute, communication runs at %.0f%% speed (from %d ops)\n",
              100 * a.cost.compute_slowdown, a.cost.contended_samples);
  if (a.cost.compute_pairs >= 3)
    std::printf(
        "beside communication, backward computes at %.0f%% speed (from %d layers against layers of their size "
        "with none)\n",
        100 * a.cost.compute_rate_beside_comm, a.cost.compute_pairs);
  std::printf(
      "a bucket's allreduce starts %.2f ms after the bucket is ready on every rank and the previous one is "
      "done (from %d buckets)\n",
      a.cost.dispatch_ns * 1e-6, a.cost.dispatch_samples);
  std::printf(
      "anchored on the recorded cap: %+.1f ms per iteration that the simulation does not explain, added to "
      "every prediction\n",
      a.calibration_ns * 1e-6);
  std::printf("%10s %8s %14s %14s %10s %12s %8s\n", "cap (MiB)", "buckets", "iteration (ms)", "fused opt (ms)",
              "comm (ms)", "exposed (ms)", "overlap");
  for (const auto& p : a.predictions) {
    std::printf("%10g %8d %14.1f %14.1f %10.1f %12.1f %8.2f%s", p.cap_mb, p.buckets, p.iteration_ms,
                p.fused_iteration_ms, p.comm_ms, p.exposed_comm_ms, p.overlap_ratio,
                p.recorded ? "   <- recorded" : "");
    if (p.recorded)
      std::printf(" (measured %.1f ms%s)", p.measured_ms, a.recorded_fused ? " with the fused optimizer" : "");
    std::printf("\n");
  }
  std::printf("%s", best_caps_text(a).c_str());
  for (const auto& n : a.notes)
    std::printf("note: %s\n", n.c_str());
}

}  // namespace

int run_advise(const std::string& path, const std::vector<double>& caps, int rank, bool json) {
  probes::RunStoreReader run(path);
  const BucketAdvice a = probes::advise_buckets(run, caps, rank);
  if (json)
    print_json(a);
  else
    print_text(path, a);
  return 0;
}

}  // namespace ddpscope::apps
