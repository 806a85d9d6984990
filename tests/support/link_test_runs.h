// Run files of link tests and traffic for the links' tests (tst_link_matrix, tst_links_page):
// one batch per rank, with its host, and spans one after the other.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "event_batch.h"
#include "run_store_writer.h"

namespace link_test_runs {

using ddpscope::probes::BatchEvent;
using ddpscope::probes::EventBatch;
using ddpscope::probes::Kind;
using ddpscope::probes::RunStoreWriter;

// One rank's batch: the host record, then spans (kind, peer, bytes, duration in ns) one
// after the other from t = 1000.
struct RankSpans {
  int rank = 0;
  std::string host;
  struct Span {
    Kind kind;
    int peer;
    int64_t bytes, duration_ns;
    const char* name = "x";
  };
  std::vector<Span> spans;
};

inline void write_run(const std::string& file, int world, const std::vector<RankSpans>& ranks) {
  RunStoreWriter w(file);
  w.begin_run({R"({"model":"mlp"})", world, "mpi", "mlp"});
  for (const RankSpans& r : ranks) {
    EventBatch b;
    b.rank = r.rank;
    b.threads.push_back({0, 1, "main"});
    b.records.push_back(R"({"type":"rank","host":")" + r.host + R"(","pid":1})");
    int64_t t = 1000;
    for (const auto& s : r.spans) {
      b.names.emplace_back(s.name);
      const auto name = static_cast<uint32_t>(b.names.size() - 1);
      b.events.push_back({t, t + s.duration_ns, s.bytes, -1, -1, 0, 0, name, -1, static_cast<int16_t>(s.peer), 0,
                          static_cast<uint8_t>(s.kind), 0});
      t += s.duration_ns + 10;
    }
    w.write(b);
  }
  w.end_run("finished");
}

// Link-test exchanges of 100 MB between every pair of `world` ranks, at `gbps(src, dst)`
// GB/s (two exchanges a direction: the faster one counts).
inline std::vector<RankSpans> measured(int world, const std::function<double(int, int)>& gbps,
                                       const std::function<std::string(int)>& host) {
  std::vector<RankSpans> out;
  for (int a = 0; a < world; ++a) {
    RankSpans r{a, host(a), {}};
    for (int b = 0; b < world; ++b) {
      if (a == b) continue;
      const auto ns = static_cast<int64_t>(1e8 / gbps(a, b));
      r.spans.push_back({Kind::LinkTest, b, 100'000'000, ns * 2});
      r.spans.push_back({Kind::LinkTest, b, 100'000'000, ns});
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace link_test_runs
