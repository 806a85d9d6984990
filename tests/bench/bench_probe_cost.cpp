// Cost of one span (begin + end) with probes on (target <= 50 ns), compiled in but
// switched off (target <= 2 ns), and compiled out, against an empty loop in the same
// run. With probes on, each round records 16384 spans (half a thread buffer) and is
// then shipped untimed, so no event is dropped; the median round is reported. Prints
// one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "probe.h"
#include "probe_cost_loops.h"
#include "probe_session.h"

using namespace ddpscope;

namespace ddpscope::bench {

double span_loop_ns(int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    DDPSCOPE_SPAN(span, probes::Kind::Mark, "bench");
    span.args().param = static_cast<int32_t>(i);
    asm volatile("" ::: "memory");
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(n);
}

}  // namespace ddpscope::bench

namespace {

double empty_loop_ns(int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i)
    asm volatile("" ::: "memory");
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         static_cast<double>(n);
}

template <typename Fn>
double median_of(int rounds, Fn&& fn) {
  std::vector<double> v;
  for (int r = 0; r < rounds; ++r)
    v.push_back(fn());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  constexpr int64_t kOffLoop = 50'000'000;
  constexpr int64_t kOnRound = 16384;
  const double empty = median_of(5, [] { return empty_loop_ns(kOffLoop); });
  const double off = median_of(5, [] { return bench::span_loop_ns(kOffLoop); });
  const double out = median_of(5, [] { return bench::span_loop_compiled_out_ns(kOffLoop); });

  const std::string file = std::filesystem::temp_directory_path() / "ddpscope-bench-probe.ddprun";
  std::filesystem::remove(file);
  double on = 0;
  uint64_t dropped = 0;
  {
    probes::ProbeSession session({.rank = 0, .run_file = file, .interval = std::chrono::hours(1)});
    on = median_of(301, [&] {
      const double ns = bench::span_loop_ns(kOnRound);
      session.flush();
      return ns;
    });
    dropped = session.dropped();
  }
  std::filesystem::remove(file);
  std::filesystem::remove(file + "-wal");
  std::filesystem::remove(file + "-shm");
  std::printf("%s\n", nlohmann::json({{"benchmark", "probe_span_cost"},
                                      {"empty_loop_ns", empty},
                                      {"span_on_ns", on},
                                      {"span_on_minus_loop_ns", on - empty},
                                      {"span_off_ns", off},
                                      {"span_off_minus_loop_ns", off - empty},
                                      {"span_compiled_out_ns", out},
                                      {"ratio_off_over_empty_loop", off / empty},
                                      {"events_dropped", dropped},
                                      {"target_on_ns", 50},
                                      {"target_off_ns", 2}})
                          .dump(2)
                          .c_str());
  return 0;
}
