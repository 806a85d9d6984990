// Collector ingest: ranks' batches over ZeroMQ (loopback TCP) into the run file, as
// fast as they can be sent. Measures events stored per second, from the first send to
// the last committed batch (target >= 5M/s), and the run file's bytes a span (target
// <= 20), against the baseline of naive SQLite use: the same spans as rows, one row per
// INSERT statement, default 4 KiB pages, no index at all, one transaction per batch, in
// the same run. Prints one JSON object.
//
//   build/tests/bench/bench_collector_ingest [total_events] [senders]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "collector.h"
#include "collector_sink.h"
#include "sqlite_db.h"

using namespace ddpscope::probes;
using Clock = std::chrono::steady_clock;

namespace {

EventBatch make_batch(int rank, int n) {
  EventBatch b;
  b.rank = rank;
  b.threads = {{0, 1, "compute"}, {1, 2, "comm"}};
  b.names = {"autograd_node", "allreduce", "grad_ready", "bucket_copy"};
  // Times as a real run has them: starts and durations that vary (a fixed pattern would
  // compress to almost nothing and flatter the bytes a span).
  uint64_t noise = 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(rank);
  auto jitter = [&](int64_t range) {
    noise = noise * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int64_t>((noise >> 33) % static_cast<uint64_t>(range));
  };
  for (int i = 0; i < n; ++i) {
    const int64_t t = 1'000'000 + int64_t{i} * 500 + jitter(200);
    b.events.push_back(BatchEvent{t, t + 50 + jitter(900), i % 7 == 0 ? 4096 : -1, i, -1, i / 100, i % 50,
                                  static_cast<uint32_t>(i % 4), static_cast<int16_t>(i % 8), -1,
                                  static_cast<uint16_t>(i < n / 2 ? 0 : 1), static_cast<uint8_t>(i % 11), 0});
  }
  return b;
}

double naive_sqlite_events_per_s(const std::string& path, const EventBatch& batch, int batches) {
  std::filesystem::remove(path);
  SqliteDb db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("PRAGMA synchronous=NORMAL");
  db.exec(
      "CREATE TABLE spans(rank, thread, kind, name_id, t_begin_ns, t_end_ns, iteration, bucket, "
      "param, bytes, peer, seq, ctx_id, msg_id)");
  Statement s = db.prepare("INSERT INTO spans VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  const auto t0 = Clock::now();
  for (int k = 0; k < batches; ++k) {
    db.exec("BEGIN");
    for (const BatchEvent& e : batch.events) {
      s.bind(1, int64_t{batch.rank})
          .bind(2, int64_t{e.thread})
          .bind(3, int64_t{e.kind})
          .bind(4, int64_t{e.name})
          .bind(5, e.t_begin_ns)
          .bind(6, e.t_end_ns)
          .bind_optional(7, e.iteration)
          .bind_optional(8, e.bucket)
          .bind_optional(9, e.param)
          .bind_optional(10, e.bytes)
          .bind_optional(11, e.peer)
          .bind_optional(12, e.id)
          .bind_optional(13, -1)
          .bind_optional(14, -1);
      s.step();
      s.rewind();
    }
    db.exec("COMMIT");
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return static_cast<double>(batch.events.size()) * batches / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t total = argc > 1 ? std::atoll(argv[1]) : 4'000'000;
  const int senders = argc > 2 ? std::atoi(argv[2]) : 2;
  constexpr int kBatch = 16384;
  const int batches_per_sender = static_cast<int>(total / senders / kBatch);
  const std::string dir = std::filesystem::temp_directory_path() / "ddpscope-bench-ingest";
  std::filesystem::create_directories(dir);
  const std::string run_file = dir + "/ingest.ddprun";
  std::filesystem::remove(run_file);

  Collector collector({.run_file = run_file, .token = "bench", .run = {.world_size = senders}});
  std::vector<std::thread> threads;
  const int64_t expected = int64_t{batches_per_sender} * kBatch * senders;
  const auto t0 = Clock::now();
  for (int r = 0; r < senders; ++r) {
    threads.emplace_back([&, r] {
      CollectorSink sink({.batch_endpoint = collector.batch_endpoint(),
                          .clock_endpoint = collector.clock_endpoint(),
                          .token = "bench"});
      EventBatch batch = make_batch(r, kBatch);
      for (int k = 0; k < batches_per_sender;) {
        if (sink.write(batch)) {
          ++k;
          // Time moves on, as in a real run: the next batch's events come later.
          for (BatchEvent& e : batch.events) {
            e.t_begin_ns += int64_t{kBatch} * 500;
            e.t_end_ns += int64_t{kBatch} * 500;
          }
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(1));  // queue full: wait
        }
      }
      // As a rank does before it exits: wait until the collector has confirmed it all.
      sink.settle(std::chrono::seconds(60));
    });
  }
  while (collector.writer().events_written() < expected)
    collector.poll(std::chrono::milliseconds(10));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& t : threads)
    t.join();
  collector.finish("finished");
  const double ours = static_cast<double>(expected) / seconds;
  const double ours_bytes = static_cast<double>(std::filesystem::file_size(run_file)) / static_cast<double>(expected);
  const double bare = naive_sqlite_events_per_s(dir + "/bare.sqlite", make_batch(0, kBatch), batches_per_sender);
  const double bare_bytes = static_cast<double>(std::filesystem::file_size(dir + "/bare.sqlite")) /
                            (static_cast<double>(kBatch) * batches_per_sender);
  std::printf("%s\n", nlohmann::json({{"benchmark", "collector_ingest"},
                                      {"events", expected},
                                      {"senders", senders},
                                      {"batch_events", kBatch},
                                      {"collector_events_per_s", std::round(ours)},
                                      {"naive_sqlite_events_per_s", std::round(bare)},
                                      {"ratio_collector_over_naive", ours / bare},
                                      {"target_events_per_s", 5'000'000},
                                      {"run_file_bytes_per_span", ours_bytes},
                                      {"naive_sqlite_bytes_per_span", bare_bytes},
                                      {"target_bytes_per_span", 20}})
                          .dump(2)
                          .c_str());
  std::filesystem::remove_all(dir);
  return 0;
}
