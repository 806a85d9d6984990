#include "probe_session.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "collector_protocol.h"
#include "collector_sink.h"
#include "probe.h"
#include "records.h"
#include "run_store_sink.h"
#include "shipper.h"
#include "stall_watcher.h"

namespace ddpscope::probes {
namespace {

std::atomic<bool> g_session_active{false};

std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace

ProbeSession::ProbeSession(ProbeSessionOptions options) : options_(std::move(options)) {
  DDPSCOPE_CHECK(!g_session_active.exchange(true),
                 "a probe session is already running in this process; finish it first");
  try {
    std::unique_ptr<EventSink> sink;
    if (!options_.collector_endpoint.empty()) {
      sink = std::make_unique<CollectorSink>(CollectorSinkOptions{.batch_endpoint = options_.collector_endpoint,
                                                                  .clock_endpoint = options_.collector_clock_endpoint,
                                                                  .token = options_.token,
                                                                  .clock_skew_ns = options_.clock_skew_ns});
    } else {
      DDPSCOPE_CHECK(!options_.run_file.empty(), "a probe session needs a run file or a collector address");
      writer_ = std::make_shared<RunStoreWriter>(options_.run_file);
      writer_->begin_run(options_.run);
      sink = std::make_unique<RunStoreSink>(writer_);
    }
    queue_record(nlohmann::json{
        {"type", "rank"}, {"host", host_name()}, {"pid", static_cast<int64_t>(getpid())}, {"device", options_.device}}
                     .dump());
    shipper_ = std::make_unique<Shipper>(std::move(sink), options_.rank, options_.interval, options_.clock_skew_ns);
    set_enabled(true);
  } catch (...) {
    g_session_active = false;
    throw;
  }
}

ProbeSession::~ProbeSession() {
  stall_watcher_.reset();
  set_enabled(false);
  shipper_.reset();  // ships what is left
  if (writer_ && !finished_) {
    try {
      writer_->end_run("finished");
    } catch (...) {
    }
  }
  g_session_active = false;
}

std::unique_ptr<ProbeSession> ProbeSession::from_environment(int rank, const std::string& device) {
  const char* endpoint = std::getenv(kCollectorEnv);
  if (!endpoint || !*endpoint) return nullptr;
  ProbeSessionOptions o;
  o.rank = rank;
  o.collector_endpoint = endpoint;
  const char* clock = std::getenv(kCollectorClockEnv);
  DDPSCOPE_CHECK(clock && *clock, kCollectorEnv, " is set but ", kCollectorClockEnv,
                 " is not; start ranks through ddpscope-cli train --np N");
  o.collector_clock_endpoint = clock;
  if (const char* token = std::getenv(kRunTokenEnv)) o.token = token;
  if (const char* skew = std::getenv(kClockSkewEnv)) {
    const std::string spec = skew;
    const auto colon = spec.find(':');
    if (colon == std::string::npos) {
      o.clock_skew_ns = std::atoll(spec.c_str());
    } else if (std::atoi(spec.substr(0, colon).c_str()) == rank) {
      o.clock_skew_ns = std::atoll(spec.c_str() + colon + 1);
    }
  }
  o.device = device;
  return std::make_unique<ProbeSession>(std::move(o));
}

void ProbeSession::flush() {
  // A stall's stacks still being taken go out with the rest (the watcher flushes them itself
  // when it is done, but a failing rank aborts right after this flush).
  if (stall_watcher_) stall_watcher_->wait_for_capture(std::chrono::seconds(5));
  shipper_->flush();
}

void ProbeSession::watch_native_stacks() {
  if (stall_watcher_) return;
  Shipper* shipper = shipper_.get();
  stall_watcher_ = std::make_unique<StallWatcher>(
      stacks_after_seconds(),
      StallWatcher::Hooks{.progress = [shipper] { return shipper->drained(); },
                          .median_iteration_ns = [shipper] { return shipper->median_iteration_ns(); },
                          .on_stall =
                              [shipper](int64_t stalled_ns, int64_t watcher_tid, bool asked) {
                                char reason[64];
                                std::snprintf(reason, sizeof reason, "no progress for %.1f s", stalled_ns / 1e9);
                                if (asked) std::snprintf(reason, sizeof reason, "asked for by the user");
                                record_native_stacks(reason, stalled_ns, {watcher_tid});
                                shipper->flush();  // a stalled rank may never ship another batch
                              }});
}

void ProbeSession::record_native_stacks_now(const std::string& reason) {
  record_native_stacks(reason, 0);
  shipper_->flush();
}

void ProbeSession::finish(const std::string& status, const std::string& message, int failed_rank) {
  flush();
  if (writer_ && !finished_) {
    writer_->end_run(status, message, failed_rank);
    writer_->set_ended_ns(now_ns());  // in process: the run's clock is this one
    finished_ = true;
  }
}

uint64_t ProbeSession::shipped() const { return shipper_->shipped(); }
uint64_t ProbeSession::dropped() const { return shipper_->dropped() + shipper_->unconfirmed(); }

}  // namespace ddpscope::probes
