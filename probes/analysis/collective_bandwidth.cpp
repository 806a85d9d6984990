#include "collective_bandwidth.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "link_matrix.h"

namespace ddpscope::probes {
namespace {

// "nccl:all_reduce", "AllReduce", "allreduce_coalesced" -> "allreduce", "allreducecoalesced".
std::string plain_op(std::string_view op) {
  if (const size_t colon = op.rfind(':'); colon != std::string_view::npos) op = op.substr(colon + 1);
  std::string out;
  for (char c : op)
    if (c != '_' && c != ' ') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

std::vector<RankRate> rank_rates(const std::vector<CollectiveRate>& collectives) {
  struct Sums {
    int n = 0;
    int64_t bytes = 0;
    double bus_bytes = 0, transfer_ms = 0;
    std::vector<double> busbw;
  };
  std::map<int, Sums> by_rank;
  for (const CollectiveRate& c : collectives) {
    Sums& s = by_rank[c.rank];
    if (c.bytes < BandwidthReport::kMinBytes || c.rate.busbw_gbps <= 0) continue;
    ++s.n;
    s.bytes += c.bytes;
    s.bus_bytes += c.rate.busbw_gbps * c.rate.transfer_ms * 1e6;  // GB/s is bytes a ns
    s.transfer_ms += c.rate.transfer_ms;
    s.busbw.push_back(c.rate.busbw_gbps);
  }
  std::vector<RankRate> out;
  for (auto& [rank, s] : by_rank)
    out.push_back({rank, s.n, s.bytes, s.transfer_ms, s.transfer_ms > 0 ? s.bus_bytes / (s.transfer_ms * 1e6) : 0,
                   median(s.busbw)});
  return out;
}

std::vector<BucketRate> bucket_rates(const RunAnalysis& analysis) {
  struct Samples {
    int64_t bytes = 0;
    std::vector<double> transfer_ms, busbw, beside;
  };
  std::map<int, Samples> by_bucket;
  for (const BucketTiming& b : analysis.buckets) {
    Samples& s = by_bucket[b.bucket];
    s.bytes = std::max(s.bytes, b.bytes);
    if (const auto r = bucket_rate(b)) {
      s.transfer_ms.push_back(r->transfer_ms);
      s.busbw.push_back(r->busbw_gbps);
      // wait_ms is the part past finalize's start: the rest ran beside backward's compute.
      s.beside.push_back(std::clamp(1 - b.wait_ms / r->transfer_ms, 0.0, 1.0));
    }
  }
  std::vector<BucketRate> out;
  for (auto& [bucket, s] : by_bucket)
    out.push_back(
        {bucket, s.bytes, static_cast<int>(s.busbw.size()), median(s.transfer_ms), median(s.busbw), median(s.beside)});
  return out;
}

}  // namespace

std::string rate_text(double gbps) {
  double value = gbps;
  const char* unit = "GB/s";
  if (gbps < 1e-3) {
    value = gbps * 1e6, unit = "kB/s";
  } else if (gbps < 1) {
    value = gbps * 1e3, unit = "MB/s";
  }
  char text[32];
  std::snprintf(text, sizeof text, value >= 100 ? "%.0f %s" : value >= 10 ? "%.1f %s" : "%.2f %s", value, unit);
  return text;
}

double bus_factor(std::string_view op, int ranks) {
  if (ranks < 1) return 0;
  const std::string o = plain_op(op);
  const double n = ranks;
  if (o.starts_with("allreduce")) return 2 * (n - 1) / n;
  if (o.starts_with("allgather") || o.starts_with("reducescatter") || o.starts_with("alltoall")) return (n - 1) / n;
  if (o.starts_with("broadcast") || o == "reduce" || o == "send" || o == "recv") return 1;
  return 0;
}

std::optional<TransferRate> transfer_rate(std::string_view op, int64_t bytes, int ranks, int64_t transfer_ns) {
  if (transfer_ns <= 0 || bytes <= 0) return std::nullopt;
  TransferRate r;
  r.transfer_ms = static_cast<double>(transfer_ns) * 1e-6;
  r.algbw_gbps = static_cast<double>(bytes) / static_cast<double>(transfer_ns);  // bytes/ns = GB/s
  r.busbw_gbps = r.algbw_gbps * bus_factor(op, ranks);
  return r;
}

std::optional<TransferRate> bucket_rate(const BucketTiming& b) {
  if (b.last_arrival_ns < 0 || b.group_ranks < 2) return std::nullopt;
  return transfer_rate("allreduce", b.bytes, b.group_ranks, b.end_ns - b.last_arrival_ns);
}

void BucketBusTotals::add(const BucketTiming& b) {
  if (b.bytes < BandwidthReport::kMinBytes) return;
  if (const auto r = bucket_rate(b)) {
    bus_bytes += r->busbw_gbps * r->transfer_ms * 1e6;  // GB/s is bytes a ns
    transfer_ms += r->transfer_ms;
  }
}

double BucketBusTotals::gbps() const {
  return transfer_ms > 0 ? bus_bytes / (transfer_ms * 1e6) : std::numeric_limits<double>::quiet_NaN();
}

BandwidthReport analyze_bandwidth(const RunTimelines& timelines, const std::vector<std::string>& names,
                                  const RunAnalysis& analysis, int world_size) {
  BandwidthReport report;
  report.ranks_recorded = static_cast<int>(timelines.ranks.size());
  report.group_ranks = std::max(report.ranks_recorded, world_size);
  const int ranks = report.group_ranks;
  std::vector<double> reference;
  for (const MatchedCollective& m : timelines.matched) {
    const int64_t last = *std::max_element(m.arrival.begin(), m.arrival.end());
    for (size_t r = 0; r < m.per_rank.size(); ++r) {
      const TimelineCollective& c = *m.per_rank[r];
      if (c.bytes <= 0) continue;  // a barrier, or a record without its size
      CollectiveRate rate;
      rate.rank = timelines.ranks[r].rank;
      rate.seq = m.seq;
      rate.iteration = c.iteration;
      rate.op = c.name_id >= 0 && static_cast<size_t>(c.name_id) < names.size() ? names[static_cast<size_t>(c.name_id)]
                                                                                : std::string("?");
      rate.bytes = c.bytes;
      rate.ranks = ranks;
      rate.last_arrival_ns = last;
      rate.end_ns = c.end;
      const auto found = transfer_rate(rate.op, c.bytes, ranks, c.end - last);
      if (!found) {
        ++report.without_rate;
        continue;
      }
      rate.rate = *found;
      if (rate.bytes >= BandwidthReport::kMinBytes && rate.rate.busbw_gbps > 0)
        reference.push_back(rate.rate.busbw_gbps);
      report.collectives.push_back(std::move(rate));
    }
  }
  report.ranks = rank_rates(report.collectives);
  report.buckets = bucket_rates(analysis);
  report.reference_busbw_gbps = percentile(std::move(reference), 0.95);
  return report;
}

BandwidthReport analyze_bandwidth(RunStoreReader& run) {
  const RunTimelines timelines = read_timelines(run, /*layers=*/false);
  BandwidthReport report = analyze_bandwidth(timelines, run.names(), analyze_run(run), run.run().world_size);
  use_measured_ceiling(report, run);
  return report;
}

void use_measured_ceiling(BandwidthReport& report, RunStoreReader& run) {
  const double ceiling = analyze_links(run).ring_ceiling_gbps;
  if (std::isnan(ceiling)) return;
  report.reference_busbw_gbps = ceiling;
  report.reference_measured = true;
}

}  // namespace ddpscope::probes
