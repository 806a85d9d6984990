// Collector: receives every rank's event batches over ZeroMQ and is the only writer of
// the run file. Batches are checked against the run's token (others are rejected and
// counted) and written one transaction each; clock pings are answered by a thread of
// their own so a long write never delays them.
//
//   Collector c({.run_file = "run.ddprun", .token = token, .run = {...}});
//   // ranks get c.batch_endpoint() and c.clock_endpoint() through the environment
//   while (!done) c.poll(std::chrono::milliseconds(100));
//   c.drain(); c.finish("finished");
//
// Thread-safety: poll/drain/finish from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "disk_reserve.h"
#include "run_store_writer.h"

namespace ddpscope::probes {

struct CollectorOptions {
  std::string run_file;
  std::string token;
  RunDescription run;
  // The address ranks reach us on.
  std::string bind_host = "127.0.0.1";
  // Batches on this port and clock pings on the next (a firewall's two open ports);
  // 0: ports the system chooses.
  int port = 0;
};

class Collector {
 public:
  explicit Collector(CollectorOptions options);
  ~Collector();

  std::string batch_endpoint() const { return batch_endpoint_; }
  std::string clock_endpoint() const { return clock_endpoint_; }
  // Waits up to `timeout` for batches and stores what arrived; returns how many.
  int poll(std::chrono::milliseconds timeout, int extra_fd = -1, bool* extra_ready = nullptr);
  // Stores batches until none has arrived for `quiet` (the ranks have flushed).
  void drain(std::chrono::milliseconds quiet = std::chrono::milliseconds(300));
  // Records the run's end (run_end.h): events lost to a full disk are added to its message.
  void finish(RunEnd end);
  void finish(const std::string& status, const std::string& message = {}) {
    RunEnd end;
    end.status = status;
    end.message = message;
    finish(std::move(end));
  }
  RunStoreWriter& writer() { return *writer_; }
  // Asks every rank that has pinged us to record its next iteration's autograd graph.
  void request_graph();
  // Asks every rank that has pinged us for every thread's stack now.
  void request_stacks();

  uint64_t batches() const { return batches_; }
  uint64_t rejected() const { return rejected_; }
  // Events refused one by one (a span that ends before it begins, a time the rank's clock
  // offset would overflow): the rest of their batch is stored.
  uint64_t events_refused() const { return events_refused_; }
  uint64_t lost_events() const { return lost_events_; }  // not stored: the disk was full
  // Ranks that sent a batch, and those whose session ended for good (their last batch
  // said so, and no restart of the job follows).
  const std::set<int>& ranks_seen() const { return ranks_seen_; }
  const std::set<int>& ranks_ended() const { return ranks_ended_; }

 private:
  bool receive_one();
  // What a holder of the run's token claims, checked before it is stored (the importers
  // refuse the same values): a reason to refuse the whole batch, or empty once the events
  // that cannot be stored are taken out of it.
  std::string check_batch(EventBatch& batch);
  void note_rank_end(int rank, const std::string& record);
  void serve_clock();

  CollectorOptions options_;
  std::unique_ptr<RunStoreWriter> writer_;
  std::unique_ptr<DiskReserve> reserve_;  // room for the end record once the disk is full
  zmq::context_t context_;
  zmq::socket_t batches_in_;  // ROUTER: batches in, acknowledgements out
  zmq::socket_t clock_socket_;
  std::string batch_endpoint_, clock_endpoint_;
  std::atomic<bool> stop_clock_{false};
  std::atomic<bool> graph_requested_{false};
  std::atomic<bool> stacks_requested_{false};
  std::thread clock_thread_;
  uint64_t batches_ = 0;
  std::set<int> ranks_seen_, ranks_ended_;
  // Ranks that joined: sent events or their placement. Only their ends count (a batch
  // that only claims another rank's end would end `collect --expect` early).
  std::set<int> ranks_joined_;
  uint64_t rejected_ = 0;
  uint64_t events_refused_ = 0;
  std::map<int, uint64_t> events_refused_by_rank_;  // into the run file's metrics at finish()
  bool warned_refused_events_ = false;
  uint64_t lost_events_ = 0;
  bool disk_full_ = false;  // since then events are counted as lost, not stored
  bool warned_rejected_ = false;
};

}  // namespace ddpscope::probes
