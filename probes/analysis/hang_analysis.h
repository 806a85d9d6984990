// Where each rank of a run stands, from its latest probe events: for the desktop app's
// hang view and `ddpscope-cli hang`. A rank waiting in a collective that another rank has
// not reached is the classic DDP hang; this says which collective (op and sequence
// number), which buckets are still pending, and which gradients have not arrived.
//
// Spans are recorded when they end, so what is still running is known from its start
// instants: PgOpStart for a process-group op, GradReady / BucketReady for the reducer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "flight_analysis.h"
#include "run_store_reader.h"

namespace ddpscope::probes {

struct PendingCollective {
  std::string op;  // allreduce, broadcast, ...
  int64_t seq = -1;
  int64_t bytes = -1;
  int64_t started_ns = 0;
};

// Where a rank stands in its current iteration. Decided from the spans it recorded, never
// from text; hang_phase_words gives what the hang text, the Hang tab and `hang --json` say.
enum class HangPhase {
  None,               // not known (flight dumps record collectives, not iterations)
  Forward,            // the iteration started; nothing of it has ended yet
  AfterForward,       // forward ended, backward has not begun
  InForward,          // blocked inside forward
  InBackward,         // blocked inside backward
  InFinalize,         // blocked in backward's finalize, waiting for the buckets' allreduces
  AfterBackward,      // backward ended (loss allreduce, logging, the optimizer's start)
  InOptimizer,        // blocked inside the optimizer step
  BetweenIterations,  // nothing of the next iteration yet
  Done,               // every iteration the job asked for is done
};
const char* hang_phase_words(HangPhase phase);

struct RankHangState {
  int rank = 0;
  int64_t completed_iterations = 0;
  int64_t current_iteration = 0;  // the one in progress: completed + 1
  int64_t last_event_ns = 0;      // end of the rank's latest event
  std::string last_event;         // its kind and name
  HangPhase phase = HangPhase::None;
  std::optional<PendingCollective> blocked_in;  // an op started and not finished
  // The collective whose failure this rank recorded (a PyTorch rank's collective_failed
  // instant): typed, so a timeout is known without reading the error's words.
  std::optional<FailedCollective> failed_in;
  int64_t latest_seq = -1;  // the highest collective sequence number this rank started
  // Buckets of the current assignment still waiting for gradients, and ready buckets
  // whose allreduce has not completed.
  std::vector<int> buckets_waiting_for_grads, buckets_waiting_for_allreduce;
  std::vector<std::string> missing_grads;  // parameters with no gradient yet this iteration
  int64_t params_total = 0;
};

struct HangReport {
  std::vector<RankHangState> ranks;
  int64_t latest_event_ns = 0;  // over every rank
  int64_t now_ns = 0;           // the time ages are measured from
  int64_t start_ns = 0;         // the run's first event (0: not known, for dumps alone)
  // False for a run made of PyTorch's dumps alone: they do not say when they were taken,
  // so how long a rank had waited is not known (not "since 0 ms").
  bool ages_known = true;
  // Plain-language diagnosis: who waits for whom, in which collective.
  std::vector<std::string> findings;
  // The first thing to read, as PyTorch's flight-recorder analysis puts it: the culprit
  // (the rank or ranks that never entered the collective the others wait in, with what
  // they did last; a rank that died, with its signal; or, when every rank entered and
  // one timed out, the ranks that never timed out themselves), then who reported the
  // failure. Empty when no rank is to blame. It is also findings' first line.
  std::string verdict;
  std::vector<int> culprits;
  int dead_rank = -1;  // a rank the launcher saw die by a signal
  std::string dead_signal;
  // The flight recorder's records and what they say (run files of schema 6 on, and
  // PyTorch's dumps). When there are records, the verdict is drawn from them alone.
  FlightData records;
  FlightVerdict flight;
  // Each rank's latest stack capture (run files of schema 12 on, PyTorch ranks): where its
  // code stood (hang_stacks.h). The verdict cites those taken after the rank's last event.
  std::vector<StackCapture> stacks;
  // Ranks of a running job that could not answer for their stack, and why ("is stopped by a
  // signal ...", "has exited"): hang_processes.h, filled by live views only.
  std::vector<std::pair<int, std::string>> unanswering;
  bool from_records() const { return !records.empty(); }
};

// now_ns: the current CLOCK_MONOTONIC time of the collector's host (live runs); 0 uses
// when the job was stopped or failed (schema 13), else the latest event of the run.
HangReport analyze_hang(RunStoreReader& run, int64_t now_ns = 0);

// The verdict from flight-recorder dumps alone (`ddpscope-cli hang DUMP...`).
HangReport analyze_hang(FlightData records);

}  // namespace ddpscope::probes
