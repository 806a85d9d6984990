#include "run_store_sink.h"
#include "ddpscope/log.h"

#include <cstdio>

namespace ddpscope::probes {

bool RunStoreSink::write(const EventBatch& batch) {
  try {
    writer_->write(batch);
    written_ += batch.events.size();
    return true;
  } catch (const std::exception& e) {
    // A full disk must not stop training: the events are counted as dropped.
    log::warn("probes: {}", e.what());
    return false;
  }
}

}  // namespace ddpscope::probes
