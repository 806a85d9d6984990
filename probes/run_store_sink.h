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

 private:
  std::shared_ptr<RunStoreWriter> writer_;
};

}  // namespace ddpscope::probes
