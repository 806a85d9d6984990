// The run file at scale: a synthetic DDP run of RANKS ranks x ITERATIONS iterations (260
// spans each: iteration, phases, 160 autograd nodes, 80 gradient ticks, 8 bucket
// allreduces and their ops; tests/bench/synthetic_run.h), written through the run store
// as a collector writes it (batches of 20,000), then read back as the app and the CLI
// read it: the structure alone (every kind but the detail kinds of event.h, what the
// analysis and a first frame need) and every span. Prints one JSON object: ingest
// spans/s, bytes a span on disk, the two scans' times and the process's peak memory.
//
//   build/tests/bench/bench_scale [ranks] [iterations] [--keep PATH]   (64 x 6000: 100M spans)
// --keep writes the run to PATH and leaves it there (for bench_timeline --open and by hand).

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "run_store_reader.h"
#include "process_figures.h"
#include "synthetic_run.h"

using namespace ddpscope;
using Clock = std::chrono::steady_clock;

using bench::peak_mib;
using bench::seconds_since;

int main(int argc, char** argv) {
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 64;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 6000;
  const bool keep = argc > 4 && std::string(argv[3]) == "--keep";
  const std::string path =
      keep ? argv[4] : (std::filesystem::temp_directory_path() / "ddpscope-bench-scale.ddprun").string();
  std::filesystem::remove(path);
  int64_t written = 0;
  const auto t_write = Clock::now();
  {
    probes::RunStoreWriter w(path);
    w.begin_run({R"({"model":"mlp"})", ranks, "mpi", "mlp"});
    // Rank by rank in chunks of iterations, as ranks' batches arrive interleaved.
    constexpr int kChunk = 100;
    for (int from = 1; from <= iterations; from += kChunk)
      for (int rank = 0; rank < ranks; ++rank)
        written += bench::write_iterations(w, rank, from, std::min(iterations, from + kChunk - 1));
    w.end_run("finished");
  }
  const double write_s = seconds_since(t_write);
  const auto file_bytes = static_cast<double>(std::filesystem::file_size(path));

  probes::RunStoreReader run(path);
  std::vector<probes::Kind> structure;
  for (int k = 0; k < probes::kNumKinds; ++k)
    if (!probes::is_detail_kind(static_cast<uint8_t>(k))) structure.push_back(static_cast<probes::Kind>(k));
  const auto t_structure = Clock::now();
  int64_t structure_spans = 0;
  run.for_each_span([&](const probes::CompactSpan&) { ++structure_spans; }, structure);
  const double structure_s = seconds_since(t_structure);
  const auto t_all = Clock::now();
  int64_t all_spans = 0;
  run.for_each_span([&](const probes::CompactSpan&) { ++all_spans; });
  const double all_s = seconds_since(t_all);
  nlohmann::ordered_json out = {{"ranks", ranks},
                                {"iterations", iterations},
                                {"spans", written},
                                {"ingest_spans_per_s", static_cast<double>(written) / write_s},
                                {"run_file_mib", file_bytes / (1 << 20)},
                                {"run_file_bytes_per_span", file_bytes / static_cast<double>(written)},
                                {"structure_spans", structure_spans},
                                {"structure_scan_s", structure_s},
                                {"all_spans_read", all_spans},
                                {"full_scan_s", all_s},
                                {"full_scan_spans_per_s", static_cast<double>(all_spans) / all_s},
                                {"peak_rss_mib", peak_mib()},
                                {"targets", {{"ingest_spans_per_s", 5e6}, {"bytes_per_span", 20}}}};
  std::printf("%s\n", out.dump(2).c_str());
  if (!keep) std::filesystem::remove(path);
  return all_spans == written ? 0 : 1;
}
