// RunStoreSink: writes batches straight into a run file, for a single process without a
// collector (the CLI's one-process training, tests).
#pragma once

#include <memory>

#include "event_sink.h"
#include "run_store_writer.h"

namespace ddpscope::probes {

class RunStoreSink : public EventSink {
 public:
  explicit RunStoreSink(std::shared_ptr<RunStoreWriter> writer) : writer_(std::move(writer)) {}
  bool write(const EventBatch& batch) override;
  uint64_t confirmed_events() const override { return written_; }

 private:
  std::shared_ptr<RunStoreWriter> writer_;
  uint64_t written_ = 0;
};

}  // namespace ddpscope::probes
