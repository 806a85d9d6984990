// Lesson: a recorded run replayed event by event for the Learn tab: one distributed
// autograd context, or (a DDP lesson, ddp_lesson.h) one rank's first iterations of DDP. The steps come from the run
// file, in time order across workers (schema 4, RUN_FILE.md):
//   - the context created;
//   - send and recv functions recorded;
//   - RPC messages sent and arriving;
//   - SMART mode's asks and activations;
//   - nodes running and dependency counts falling;
//   - the context released.
// The state after any step is a pure function of the steps before it, so stepping
// backwards restores exactly what was shown. Plain data, no Qt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph_data.h"
#include "run_store_reader.h"
#include "sequence_data.h"

namespace ddpscope::gui {

class LessonKind;  // lesson_kind.h

enum class StepKind : uint8_t {
  ContextCreated,
  FunctionRecorded,  // a send or recv function recorded during forward
  MessageSent,
  MessageArrived,
  SmartAsk,     // SMART: this worker asks `peer` to activate a send function
  SmartActive,  // SMART: a send function of this worker becomes active
  NodeRuns,
  CountFalls,  // a node's dependency count falls (to `count_left`)
  ContextReleased,
  // DDP lessons:
  IterationStarts,  // `iteration`; its buckets are generation `bucket` (0, or 1 once rebuilt)
  GradReady,        // `param`'s gradient is ready and copied into its bucket
  BucketReady,      // every gradient of `bucket` arrived
  AllreduceStarts,  // `bucket`'s allreduce launched (bytes)
  AllreduceEnds,
  FinalizeStarts,  // backward ends: waiting for the buckets still reducing
  // ZeRO lessons:
  ShardStep,        // this rank steps its share of `bucket` (-1: of every bucket, after backward)
  ParamsBroadcast,  // every rank broadcasts the parameters it owns (bytes: all of them)
  // Ring lessons (ring_lesson.h), each recorded step of the ring (`iteration`, 0 .. 2n-3)
  // in two halves, so nothing arrives before it left:
  RingSend,     // `rank` sends block `param` to `peer`
  RingReceive,  // `rank` receives block `bucket` from `peer` (the rank before it) and adds or keeps it
  Verdict,      // the run did not finish: where each rank stood (the hang view's findings)
};

struct LessonStep {
  int64_t t_ns = 0;
  int rank = 0;  // the worker where it happens
  StepKind kind = StepKind::NodeRuns;
  int node = -1;  // into Lesson::graph.nodes (NodeRuns, CountFalls; a recorded function's node when known)
  int64_t count_left = -1;
  int64_t msg_id = -1;  // messages: the RPC message id; functions and SMART: the autograd message id
  int peer = -1;
  int64_t bytes = -1;
  std::string name;         // the function called, or "send" / "recv"
  int wire_kind = -1;       // messages: 1 call, 2 response, 3 error, ...
  double duration_us = -1;  // NodeRuns: how long it ran; MessageArrived: time on the way
  int iteration = -1;       // DDP lessons
  int param = -1;
  int bucket = -1;
  // Happens at the same time as the step before it: neither waited for the other (their
  // order on the screen is their clocks', which causality leaves free; causal_order.h).
  bool concurrent = false;
};

// Per rank, nanoseconds added to its clock when a lesson is loaded: tests skew the ranks'
// clocks with it to check that the order shown follows causality, not the clocks.
using ClockSkew = std::vector<std::pair<int, int64_t>>;

// A DDP lesson's bucket as its state shows it.
struct BucketFill {
  int params_ready = 0, params_total = 0;
  int64_t bytes_ready = 0, bytes_total = 0;
  enum class Phase { Filling, Ready, Reducing, Reduced } phase = Phase::Filling;
  int params_owned = -1;  // ZeRO: the bucket's parameters this rank updates (-1: no ZeRO)
  bool stepped = false;   // ZeRO: this rank has updated them this iteration
};

// A DDP lesson's parameters and bucket assignments (generation 0 and, once rebuilt, 1).
struct DdpLayout {
  std::vector<std::string> param_names;  // by parameter index
  std::vector<int64_t> param_bytes;
  std::vector<std::vector<std::vector<int>>> generations;  // [generation][bucket] -> params
  std::vector<int> owners;  // ZeRO: the rank that updates each parameter; empty without ZeRO
};

struct LessonState {
  std::vector<int64_t> counters;  // per graph node: the dependency count left
  std::vector<bool> executed;     // per graph node: has run
  int running = -1;               // the node of the latest NodeRuns step, if it is the latest step
  // Messages sent and not yet arrived: indexes of their MessageSent steps.
  std::vector<size_t> in_flight;
  // Leaves whose gradient has been accumulated into the context (AccumulateGrad nodes at 0),
  // until their worker releases the context and frees them.
  std::vector<int> accumulated;
  std::vector<int> released;  // workers that released the context, in order
  std::vector<bool> active;   // SMART: per graph node, a send function made active
  // DDP lessons: the current iteration's buckets, filling.
  int generation = 0;
  std::vector<BucketFill> buckets;
  bool broadcast = false;  // ZeRO: this iteration's parameters went out from their owners
  // Ring lessons: per rank, per block, the ranks whose values that rank's copy of the
  // block sums (bit r: rank r's); and per rank the ring steps it has done.
  std::vector<std::vector<uint64_t>> holds;
  std::vector<int> ring_steps_done;      // per rank, the ring steps it has sent
  std::vector<int> ring_steps_received;  // per rank, the ring steps whose block it has received
  std::vector<int64_t> ring_bytes_sent;  // per rank, so far
};

struct Lesson {
  int64_t ctx_id = -1;
  int64_t pass = -1;
  GraphData graph;  // the pass's distributed graph (every worker's part); a DDP lesson: the rank's
  std::vector<LessonStep> steps;
  const LessonKind* kind = nullptr;  // what it is (lesson_kind.h); the flags below say the same for views
  bool ddp = false;
  int rank = 0;       // a DDP lesson's rank
  DdpLayout layout;   // a DDP lesson's parameters and buckets
  bool ring = false;  // a ring allreduce's steps (ring_lesson.h)
  int ring_ranks = 0;
  int64_t ring_tensor_bytes = 0;     // the tensor summed (each rank's)
  std::vector<std::string> verdict;  // a run that did not finish: its status and the hang findings

  // The state once the first `applied` steps have happened (0: before any).
  LessonState stateAfter(size_t applied) const;
  // One or two plain sentences about step `i`, generated from its event and the graph.
  std::string explain(size_t i) const;
  // A distributed autograd lesson's step, without what concerns its order.
  std::string explainDistributedStep(size_t i) const;
  // The next NodeRuns step at or after `from`, or steps.size(): for "predict the next step".
  size_t nextNodeStep(size_t from) const;
};

// The autograd and DDP kinds' state: their recorded events applied in order.
LessonState replayEvents(const Lesson& lesson, size_t applied);

// The lesson's messages for the send/recv view once `applied` steps have happened: those
// sent so far, the ones not yet arrived without a receive (drawn in flight). The time
// range is the whole lesson's, so the picture grows in place step by step.
SequenceData lessonSequence(const Lesson& lesson, size_t applied);

// The lesson of context `ctx_id` (its first recorded pass, or `pass`). Throws
// probes::RunStoreError when the run cannot be read; steps are empty when the run holds
// no such context.
Lesson loadLesson(probes::RunStoreReader& run, int64_t ctx_id, int64_t pass = -1, const ClockSkew& skew = {});

// Puts the steps in happens-before order (causal_order.h), given what each waited for
// (causes[i]: indexes of steps on other ranks), and marks the concurrent ones.
void orderByCausality(std::vector<LessonStep>& steps, const std::vector<std::vector<size_t>>& causes);
// The nanoseconds `skew` adds to `rank`'s clock.
int64_t skewOf(const ClockSkew& skew, int rank);
// What a lesson says of a step concurrent with the one before.
std::string concurrentText();

}  // namespace ddpscope::gui
