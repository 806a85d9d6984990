#include "network_bound.h"

#include <cmath>
#include <vector>

#include "bucket_advice.h"
#include "ddpscope/median.h"
#include "ddpscope/printf_string.h"

namespace ddpscope::probes {
namespace {

// What advise predicts for the best cap, when it is not the recorded one; the text for it.
std::string advice_text(RunStoreReader& run, NetworkBound& nb) {
  try {
    const BucketAdvice a = advise_buckets(run);
    for (const CapPrediction& p : a.predictions) {
      if (p.recorded) nb.recorded_iteration_ms = p.iteration_ms;
      if (p.cap_mb == a.best_cap_mb) nb.best_cap_iteration_ms = p.iteration_ms;
    }
    if (a.best_cap_mb == a.recorded_cap_mb || nb.best_cap_iteration_ms <= 0)
      return " No bucket cap is predicted faster than the recorded one (ddpscope-cli advise): only a faster network, "
             "or less to send (a compressing comm hook), would help.";
    nb.best_cap_mb = a.best_cap_mb;
    nb.setting = cap_setting(a, a.best_cap_mb);
    return printf_string(
        " A bucket cap of %g MiB (%s) is predicted to take an iteration from %.1f ms to %.1f ms "
        "(ddpscope-cli advise); past that, only a faster network would help.",
        a.best_cap_mb, nb.setting.c_str(), nb.recorded_iteration_ms, nb.best_cap_iteration_ms);
  } catch (const std::exception&) {
    return " (No bucket advice: the run has no gradient-ready marks.)";
  }
}

}  // namespace

std::optional<NetworkBound> find_network_bound(RunStoreReader& run, const LinkReport& links,
                                               const BandwidthReport& bandwidth, const RunAnalysis& analysis) {
  if (!links.measured || links.slow || std::isnan(links.ring_ceiling_gbps) || links.ring_ceiling_gbps <= 0)
    return std::nullopt;
  std::vector<double> medians;
  for (const RankRate& r : bandwidth.ranks)
    if (r.collectives >= 3) medians.push_back(r.median_busbw_gbps);
  if (medians.empty()) return std::nullopt;
  NetworkBound nb;
  nb.busbw_gbps = median(medians);
  nb.ceiling_gbps = links.ring_ceiling_gbps;
  if (nb.share() < NetworkBound::kNearCeiling) return std::nullopt;
  int n = 0;
  for (const auto& [rank, sums] : rank_sums(analysis)) {
    if (sums.n == 0) continue;
    nb.iteration_ms += sums.iteration / sums.n;
    nb.exposed_comm_ms += sums.exposed / sums.n;
    ++n;
  }
  if (n > 0) nb.iteration_ms /= n, nb.exposed_comm_ms /= n;
  // Past the ceiling: transfers short enough to ride a link's burst (a rate limiter's, a
  // switch's buffer) beat a long exchange's rate.
  const std::string share =
      nb.share() >= 1 ? "as fast as the links' measured ceiling (" + link_rate_text(nb.ceiling_gbps) + ") allows"
                      : printf_string("%.0f%% of the links' measured ceiling (%s)", 100 * nb.share(),
                                      link_rate_text(nb.ceiling_gbps).c_str());
  nb.text = printf_string(
      "The job is network-bound: its collectives run at %s, %s, and an iteration of %.1f ms holds %.1f ms of "
      "communication nothing overlaps.",
      link_rate_text(nb.busbw_gbps).c_str(), share.c_str(), nb.iteration_ms, nb.exposed_comm_ms);
  nb.text += advice_text(run, nb);
  return nb;
}

std::optional<NetworkBound> find_network_bound(RunStoreReader& run, const LinkReport& links) {
  if (!links.measured || links.slow) return std::nullopt;
  const RunAnalysis analysis = analyze_run(run);
  BandwidthReport bandwidth =
      analyze_bandwidth(read_timelines(run, /*layers=*/false), run.names(), analysis, run.run().world_size);
  return find_network_bound(run, links, bandwidth, analysis);
}

}  // namespace ddpscope::probes
