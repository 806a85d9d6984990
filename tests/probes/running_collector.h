// A collector on a thread of its own for the collector tests, and batches to send it.
#pragma once

#include <QtTest/QtTest>

#include <atomic>
#include <thread>
#include "collector.h"
#include "collector_sink.h"
#include "probe.h"
#include "run_store_reader.h"
#include "scratch_test.h"

namespace ddpscope::probes::running_collector {

inline EventBatch batch_of(int rank, int n, int64_t t0) {
  EventBatch b;
  b.rank = rank;
  b.names = {"tick"};
  b.threads = {{0, 1, "compute"}};
  for (int i = 0; i < n; ++i) {
    b.events.push_back(
        BatchEvent{t0 + i, t0 + i + 10, -1, -1, -1, 1, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Mark), 0});
  }
  return b;
}

// Runs the collector's loop on a thread of its own until stopped.
struct RunningCollector {
  explicit RunningCollector(CollectorOptions o) : collector(std::move(o)) {
    thread = std::thread([this] {
      while (!stop)
        collector.poll(std::chrono::milliseconds(20));
      collector.drain(std::chrono::milliseconds(200));
      collector.finish("finished");
    });
  }
  ~RunningCollector() { join(); }
  void join() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
  Collector collector;
  std::atomic<bool> stop{false};
  std::thread thread;
};

}  // namespace ddpscope::probes::running_collector
