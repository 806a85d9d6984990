#include "run_stats_text.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "arrival_wait.h"
#include "collective_bandwidth.h"
#include "ddpscope/plural.h"
#include "ddpscope/printf_string.h"

namespace ddpscope::probes {
namespace {

using Json = nlohmann::ordered_json;

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  return printf_string(fmt, args...);
}

double number_or(const Json& j, const char* key, double fallback) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

std::string text_or(const Json& j, const char* key, const std::string& fallback) {
  return j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty() ? j[key].get<std::string>()
                                                                                     : fallback;
}

// "0.66", or "-" where a figure has no meaning or is not known (a ratio without any
// communication; the wait of a run of one rank, which has no one to wait for).
std::string number_or_dash(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? format("%.2f", j[key].get<double>()) : "-";
}

std::string run_line(const Json& stats) {
  const Json& run = stats["run"];
  std::string line = format("Run: %s, %s", text_or(run, "status", "unknown").c_str(),
                            count_of(static_cast<int64_t>(number_or(run, "world_size", 0)), "rank").c_str());
  line += ", backend " + text_or(run, "backend", "unknown") + ", model " + text_or(run, "model", "unknown");
  if (run.contains("failed_rank") && run["failed_rank"].is_number())
    line += format(", failed on rank %d", run["failed_rank"].get<int>());
  line += "\n";
  if (run.contains("message") && run["message"].is_string() && !run["message"].get<std::string>().empty())
    line += "  " + run["message"].get<std::string>() + "\n";
  return line;
}

std::string summary_table(const Json& summary) {
  if (summary.empty()) return "No iteration finished on any rank: there are no timings to summarise.\n";
  std::string out =
      "Per rank, the mean of its iterations after the first (warm-up); exposed communication is\n"
      "waiting for the other ranks to arrive plus transfer after the last one arrived:\n"
      "  rank  iterations  iteration (ms)  compute (ms)  comm (ms)  exposed comm (ms)  waiting  transfer  overlap"
      "  figures\n";
  bool waits = false;
  for (const Json& r : summary) {
    out += format("  %4d  %10lld  %14.2f  %12.2f  %9.2f  %17.2f  %7s  %8s  %7s  %s\n", r["rank"].get<int>(),
                  r["iterations"].get<long long>(), number_or(r, "mean_iteration_ms", 0),
                  number_or(r, "mean_compute_ms", 0), number_or(r, "mean_comm_ms", 0),
                  number_or(r, "mean_exposed_comm_ms", 0), number_or_dash(r, "mean_exposed_wait_ms").c_str(),
                  number_or_dash(r, "mean_exposed_transfer_ms").c_str(), number_or_dash(r, "overlap_ratio").c_str(),
                  text_or(r, "figures", "cpu").c_str());
    waits = waits || mostly_waits(number_or(r, "mean_exposed_wait_ms", 0), number_or(r, "mean_exposed_comm_ms", 0),
                                  number_or(r, "mean_iteration_ms", 0));
  }
  if (waits) out += "  A rank that mostly waits is not slow itself: it waits for another rank to arrive.\n";
  return out;
}

// The ranks the others waited for, as `why` counts them (run_stats.h's "late"): the costliest
// iterations first, at most five, then how often each rank was the one, and whether one
// rank is the job's straggler.
std::string late_text(const Json& late) {
  if (!late.is_object() || !late["by_iteration"].is_array() || late["by_iteration"].empty()) return "";
  std::vector<const Json*> rows;
  std::map<int, int> count;
  for (const Json& r : late["by_iteration"]) {
    rows.push_back(&r);
    ++count[r["rank"].get<int>()];
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Json* a, const Json* b) {
    return number_or(*a, "lost_ms", 0) > number_or(*b, "lost_ms", 0);
  });
  std::string out =
      "Late ranks (in an iteration, the rank the others waited for, where that cost them over the noise: a tenth of "
      "an iteration, 0.5 ms at least), the costliest first:\n";
  for (size_t i = 0; i < rows.size() && i < 5; ++i)
    out += format("  iteration %lld: rank %d, the others waited %.1f ms\n", (*rows[i])["iteration"].get<long long>(),
                  (*rows[i])["rank"].get<int>(), number_or(*rows[i], "lost_ms", 0));
  if (rows.size() > 5) out += format("  ... and %zu more (--json lists every one)\n", rows.size() - 5);
  std::string counts;
  for (const auto& [rank, n] : count)
    counts += format("%srank %d in %d", counts.empty() ? "" : ", ", rank, n);
  std::string verdict = "no rank stands out (ddpscope-cli why weighs them)";
  if (late["straggler"].is_number_integer()) {
    verdict = format("rank %d is the one the job waits for", late["straggler"].get<int>());
    if (late["spell"].is_object())
      verdict += format(" in iterations %lld to %lld", late["spell"]["first_iteration"].get<long long>(),
                        late["spell"]["last_iteration"].get<long long>());
    verdict += " (ddpscope-cli why says why)";
  }
  out += format("  %s of %lld iterations: %s\n", counts.c_str(),
                static_cast<long long>(number_or(late, "iterations", 0)), verdict.c_str());
  return out;
}

std::string cut_short_text(const Json& cut) {
  if (!cut.is_array() || cut.empty()) return "";
  std::string out = "Cut short by an error (left out of the means):";
  for (const Json& c : cut)
    out += format(" rank %d iteration %lld (%.1f ms until the error);", c["rank"].get<int>(),
                  c["iteration"].get<long long>(), number_or(c, "until_error_ms", 0));
  out.back() = '\n';
  return out;
}

// A bucket whose allreduce is slow because it runs beside backward, said: in the demo, the
// first bucket's took 4.6 ms from the last arrival (16.5 MB/s) against 0.03-0.06 ms for the
// others', its communication thread waiting for a core the backward of both ranks held, and
// the ranks' overall rate read 0.09 GB/s against a median of 2.9 with no word why.
std::string buckets_beside_backward_text(const Json& b, double reference) {
  std::string out;
  if (reference <= 0 || !b.contains("by_bucket")) return out;
  for (const Json& k : b["by_bucket"]) {
    const double gbps = number_or(k, "median_busbw_gbps", 0), beside = number_or(k, "median_beside_backward", 0);
    if (number_or(k, "samples", 0) < 5 || gbps >= 0.25 * reference || beside < 0.5) continue;
    const double bytes = number_or(k, "bytes", 0);
    out += format(
        "Bucket %d (%s): %s in its median allreduce (%.3f ms from the last arrival), %.0f%% of the reference, %.0f%% "
        "of that time beside backward's compute: the rate is what the allreduce got of the cores (or GPU) backward "
        "was using, not the link's, and it pulls the overall rates above down.\n",
        k["bucket"].get<int>(),
        bytes >= 1048576 ? format("%.1f MiB", bytes / 1048576).c_str() : format("%.0f KiB", bytes / 1024).c_str(),
        rate_text(gbps).c_str(), number_or(k, "median_transfer_ms", 0), 100 * gbps / reference, 100 * beside);
  }
  return out;
}

// Each rank's bus bandwidth in its collectives, timed from the last rank's arrival, and
// read against the run's reference.
std::string bandwidth_text(const Json& b) {
  if (!b.is_object() || !b.contains("by_rank")) return "";
  const double reference = number_or(b, "reference_busbw_gbps", 0);
  bool any = false;
  for (const Json& r : b["by_rank"])
    any = any || number_or(r, "collectives", 0) > 0;
  if (!any) return "";
  const bool measured = b.value("reference_measured", false);
  std::string out = format(
      "\nBus bandwidth in collectives of %lld KiB or more, from the last rank's arrival to each rank's end\n"
      "(GB/s; %s %.3f GB/s%s):\n",
      static_cast<long long>(number_or(b, "min_bytes", 0)) / 1024,
      measured ? "the reference, the slowest measured link between neighbouring ranks, is"
               : "the run's reference, its 95th percentile, is",
      reference, measured ? ", measured by --measure-links" : ": no link was measured");
  const auto recorded = static_cast<int>(number_or(b, "ranks_recorded", 0));
  const auto group = static_cast<int>(number_or(b, "group_ranks", 0));
  if (recorded < group)
    out += format(
        "The run holds %d of the job's %d ranks: the last arrival is the last of those, so a transfer\n"
        "may hold waiting for the others, and each rate is a lower bound.\n",
        recorded, group);
  // Overall: bus bytes over all the transfer time, where a few slow collectives (a rank
  // descheduled mid-transfer) weigh heavily; the median is the typical collective's, and
  // that is what is read against the reference (itself a percentile of collectives).
  out += "  rank  collectives  moved (MiB)  transfer (ms)  overall  median  median of reference\n";
  for (const Json& r : b["by_rank"]) {
    const double bw = number_or(r, "busbw_gbps", 0);
    const double median = number_or(r, "median_busbw_gbps", 0);
    out += format("  %4d  %11lld  %11.1f  %13.1f  %7.3f  %6.3f  %19s\n", r["rank"].get<int>(),
                  static_cast<long long>(number_or(r, "collectives", 0)), number_or(r, "bytes", 0) / 1048576.0,
                  number_or(r, "transfer_ms", 0), bw, median,
                  reference > 0 ? format("%.0f%%", 100 * median / reference).c_str() : "-");
  }
  return out + buckets_beside_backward_text(b, reference);
}

std::string stalls_text(const Json& stalls) {
  if (!stalls.is_array() || stalls.empty()) return "";
  std::string out = "Stalled (left out of the means; ddpscope-cli why says more):";
  for (const Json& st : stalls)
    out += format(" iteration %lld, rank %d, %.1f s, rank %d waited in %s;", st["iteration"].get<long long>(),
                  st["rank"].get<int>(), number_or(st, "lost_ms", 0) / 1000, st["waiting_rank"].get<int>(),
                  text_or(st, "waited_in", "?").c_str());
  out.back() = '\n';
  return out;
}

std::string nonfinite_text(const Json& nonfinite) {
  if (!nonfinite.is_object()) return "";
  std::string out;
  if (nonfinite["loss"].is_object())
    out +=
        format("First non-finite loss: iteration %lld, rank %d (%s)\n", nonfinite["loss"]["iteration"].get<long long>(),
               nonfinite["loss"]["rank"].get<int>(), text_or(nonfinite["loss"], "value", "?").c_str());
  if (nonfinite["gradient"].is_object())
    out += format("First non-finite gradient: iteration %lld, rank %d, parameter %s\n",
                  nonfinite["gradient"]["iteration"].get<long long>(), nonfinite["gradient"]["rank"].get<int>(),
                  text_or(nonfinite["gradient"], "parameter", "?").c_str());
  return out;
}

std::string rejected_text(const Json& rejected) {
  if (!rejected.is_object()) return "";
  const auto batches = static_cast<int64_t>(number_or(rejected, "collector_batches", 0));
  const auto without_token = static_cast<int64_t>(number_or(rejected, "rpc_without_token", 0));
  const auto malformed = static_cast<int64_t>(number_or(rejected, "rpc_malformed", 0));
  const auto events = static_cast<int64_t>(number_or(rejected, "collector_events", 0));
  if (batches + without_token + malformed + events == 0) return "";
  return "Refused at the run's doors: " + count_of(batches, "collector batch", "collector batches") + ", " +
         count_of(without_token, "RPC message") + " without the job's token, " +
         count_of(malformed, "malformed RPC message") +
         (events > 0 ? ", " + count_of(events, "event") + " that ended before they began or overflowed the clock"
                     : "") +
         "\n";
}

std::string iterations_table(const Json& iterations) {
  if (!iterations.is_array() || iterations.empty()) return "";
  std::string out =
      "\nPer rank and iteration (ms):\n"
      "  iteration  rank  iteration  forward  backward  optimizer    comm  exposed  overlap\n";
  for (const Json& it : iterations)
    out += format("  %9lld  %4d  %9.2f  %7.2f  %8.2f  %9.2f  %6.2f  %7.2f  %7s\n", it["iteration"].get<long long>(),
                  it["rank"].get<int>(), number_or(it, "iteration_ms", 0), number_or(it, "forward_ms", 0),
                  number_or(it, "backward_ms", 0), number_or(it, "optimizer_ms", 0), number_or(it, "comm_ms", 0),
                  number_or(it, "exposed_comm_ms", 0), number_or_dash(it, "overlap_ratio").c_str());
  return out;
}

}  // namespace

std::string run_stats_text(const Json& stats, bool summary_only) {
  std::string out = run_line(stats);
  out += summary_table(stats["summary"]);
  out += late_text(stats["late"]);
  out += cut_short_text(stats["cut_short"]);
  out += stalls_text(stats["stalls"]);
  out += nonfinite_text(stats["nonfinite"]);
  out += rejected_text(stats["rejected"]);
  out += bandwidth_text(stats["bandwidth"]);
  if (!summary_only) out += iterations_table(stats["iterations"]);
  return out;
}

}  // namespace ddpscope::probes
