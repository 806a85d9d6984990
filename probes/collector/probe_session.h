// ProbeSession: switches the probes on for this process and ships what they record,
// either to the job's collector (ranks of a launched job: options from the environment
// the launcher sets) or straight into a run file (one process, no collector).
//
//   auto session = ProbeSession::from_environment(rank);   // a rank under the launcher
//   ProbeSession session({.rank = 0, .run_file = "run.ddprun"});  // one process
//   ... train ...
//   session.finish("finished");
//
// Only one session may exist in a process at a time. Destroying it ships what is left
// and switches the probes off.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "run_store_writer.h"

namespace ddpscope::probes {

class Shipper;
class StallWatcher;

struct ProbeSessionOptions {
  int rank = 0;
  // Direct mode: the run file to write, and the run it describes.
  std::string run_file;
  RunDescription run;
  // Collector mode.
  std::string collector_endpoint;
  std::string collector_clock_endpoint;
  std::string token;
  int64_t clock_skew_ns = 0;
  std::chrono::milliseconds interval{50};
  std::string device = "cpu";
};

class ProbeSession {
 public:
  explicit ProbeSession(ProbeSessionOptions options);
  ~ProbeSession();
  ProbeSession(const ProbeSession&) = delete;
  ProbeSession& operator=(const ProbeSession&) = delete;

  // A collector-mode session when the launcher set DDPSCOPE_COLLECTOR, else null.
  static std::unique_ptr<ProbeSession> from_environment(int rank, const std::string& device = "cpu");

  // Ships everything recorded so far before returning.
  void flush();
  // Direct mode: ships what is left and marks the run (finished | failed | stopped).
  void finish(const std::string& status, const std::string& message = {}, int failed_rank = -1);
  // Events confirmed to be in the run file.
  uint64_t shipped() const;
  // Events lost: full buffers, batches refused, and (after flush) batches never confirmed.
  uint64_t dropped() const;
  bool direct() const { return writer_ != nullptr; }
  // Our engine's ranks: every thread's native stack into the run when the rank makes no
  // progress for a while (stall_watcher.h), once per stall.
  void watch_native_stacks();
  // The same at once, shipped before returning (a rank whose collective failed).
  void record_native_stacks_now(const std::string& reason);

 private:
  ProbeSessionOptions options_;
  std::shared_ptr<RunStoreWriter> writer_;
  std::unique_ptr<Shipper> shipper_;
  std::unique_ptr<StallWatcher> stall_watcher_;  // before the shipper goes
  bool finished_ = false;
};

}  // namespace ddpscope::probes
