#include "shipper.h"

#include <algorithm>
#include <unordered_map>

#include "probe.h"
#include "flight_recorder.h"
#include "records.h"
#include "thread_buffer.h"
#include "tick_clock.h"

namespace ddpscope::probes {

namespace {
uint64_t dropped_by_buffers() {
  uint64_t n = BufferRegistry::instance().dropped_by_removed();
  for (const auto& b : BufferRegistry::instance().buffers())
    n += b->dropped();
  return n;
}
}  // namespace

Shipper::Shipper(std::unique_ptr<EventSink> sink, int rank, std::chrono::milliseconds interval, int64_t clock_skew_ns)
    : sink_((TickClock::instance(), std::move(sink))),  // calibrated before the first event
      rank_(rank),
      interval_(interval),
      clock_skew_ns_(clock_skew_ns),
      dropped_before_(dropped_by_buffers()) {
  thread_ = std::thread([this] { loop(); });
}

Shipper::~Shipper() {
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  flush();
}

void Shipper::loop() {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  while (!stop_) {
    wake_.wait_for(lock, interval_, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    {
      std::lock_guard<std::mutex> ship(ship_mutex_);
      ship_locked();  // no waiting for confirmations here
      confirmed_ = sink_->confirmed_events();
    }
    lock.lock();
  }
}

void Shipper::flush(std::chrono::milliseconds settle) {
  std::lock_guard<std::mutex> lock(ship_mutex_);
  ship_locked();
  sink_->settle(settle);
  confirmed_ = sink_->confirmed_events();
}

uint64_t Shipper::dropped() const { return undelivered_.load() + dropped_by_buffers() - dropped_before_; }

void Shipper::note_iteration(int64_t ns) {
  std::lock_guard<std::mutex> lock(iterations_mutex_);
  if (iteration_ns_.size() < kIterationsKept)
    iteration_ns_.push_back(ns);
  else
    iteration_ns_[next_iteration_] = ns;
  next_iteration_ = (next_iteration_ + 1) % kIterationsKept;
}

int64_t Shipper::median_iteration_ns() const {
  std::lock_guard<std::mutex> lock(iterations_mutex_);
  if (iteration_ns_.empty()) return 0;
  std::vector<int64_t> sorted = iteration_ns_;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
  return sorted[sorted.size() / 2];
}

void Shipper::ship_locked() {
  sink_->tick();
  auto buffers = BufferRegistry::instance().buffers();
  EventBatch batch;
  batch.rank = rank_;
  for (const auto& b : buffers)
    batch.threads.push_back({b->index(), b->tid(), b->name()});
  const auto thread_infos = batch.threads;
  batch.records = take_records();
  for (std::string& r : FlightRecorder::take_changes(clock_skew_ns_))
    batch.records.push_back(std::move(r));
  std::unordered_map<const SourceLocation*, uint32_t> name_index;

  auto send = [&] {
    batch.sequence = sequence_++;
    batch.clock_offset_ns = sink_->clock_offset_ns();
    batch.dropped_total = dropped();
    if (sink_->write(batch)) {
      shipped_ += batch.events.size();
    } else {
      undelivered_ += batch.events.size();
    }
    batch.events.clear();
    batch.names.clear();
    batch.records.clear();
    batch.threads = thread_infos;
    name_index.clear();
  };

  TickClock& ticks = TickClock::instance();
  ticks.refresh();
  for (const auto& b : buffers) {
    drained_.clear();
    b->drain(drained_);
    for (Event e : drained_) {
      if (e.flags & kTimesInTicks) {
        e.t_begin_ns = ticks.to_ns(e.t_begin_ns);
        e.t_end_ns = ticks.to_ns(e.t_end_ns);
      }
      if (e.kind == Kind::Iteration && e.t_end_ns > e.t_begin_ns) note_iteration(e.t_end_ns - e.t_begin_ns);
      auto [it, inserted] = name_index.try_emplace(e.where, static_cast<uint32_t>(batch.names.size()));
      if (inserted) {
        batch.names.push_back(
            e.where ? NameInfo(e.where->name ? e.where->name : "", e.where->file ? e.where->file : "", e.where->line)
                    : NameInfo(""));
      }
      batch.events.push_back(BatchEvent{e.t_begin_ns + clock_skew_ns_, e.t_end_ns + clock_skew_ns_, e.bytes, e.id,
                                        e.id2, e.iteration, e.param, it->second, e.bucket, e.peer, b->index(),
                                        static_cast<uint8_t>(e.kind), static_cast<uint8_t>(e.flags & ~kTimesInTicks)});
      if (batch.events.size() == kMaxEventsPerBatch) send();
    }
  }
  if (!batch.events.empty() || !batch.records.empty() || sequence_ == 0) send();
}

}  // namespace ddpscope::probes
