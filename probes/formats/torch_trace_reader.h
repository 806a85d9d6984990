// TorchTraceReader: streams one PyTorch profiler trace (Chrome-trace JSON) event by
// event, never building the whole document: RapidJSON's SAX reader over zlib, so a plain
// file and a `.gz` read the same way, in bounded memory whatever the file's size.
//
// Two forms are read (probes/store/RUN_FILE.md, "PyTorch traces"):
//  - Kineto's: {"schemaVersion", "distributedInfo", "baseTimeNanoseconds", ...,
//    "traceEvents": [...]}: ts in microseconds, + baseTimeNanoseconds = Unix time;
//  - the older list form, a bare array of events (PyTorch built without Kineto, e.g.
//    Debian's 1.13): ts in microseconds from the profiler's start.
//
//   TraceHeader header = read_torch_trace("rank0.json", [&](const TraceEvent& e) {...});
//
// Errors (TraceFileError) name the file and, for damage, the byte where it was found.
// Hostile files are refused, not followed: a name over 1 MiB or any string over 16 MiB,
// a rank or world size outside 0..2^31-1, a group listing more than 2^20 ranks or a file
// of more than 65,536 groups, each naming the file and the byte.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gz_stream.h"  // TraceFileError

namespace ddpscope::probes {

struct ProcessGroupInfo {
  std::string name;  // pg_name ("0" is the default group)
  std::string desc;  // pg_desc ("default_pg")
  std::vector<int> ranks;
};

struct TraceHeader {
  bool list_form = false;      // a bare array of events
  bool has_dist_info = false;  // distributedInfo present
  std::string backend;         // distributedInfo.backend
  int rank = -1;               // distributedInfo.rank
  int world_size = -1;         // distributedInfo.world_size
  std::vector<ProcessGroupInfo> groups;
  int64_t base_time_ns = 0;  // baseTimeNanoseconds (0: none)
  int schema_version = -1;
  int devices = 0;     // entries of deviceProperties
  int64_t events = 0;  // trace events read
  // Events left out for bad numbers (never passed to on_event): a time that is not a
  // finite number or lies outside what nanoseconds since 1970 can hold, a negative
  // duration.
  int64_t skipped_bad_time = 0, skipped_negative_duration = 0;
  // Written by ddpscope's own export (kineto_export.h): its times are already on the
  // run's shared clock, whose uncertainty it carries, and its events carry their spans.
  bool ddpscope_export = false;
  int64_t ddpscope_clock_uncertainty_ns = -1;
  // ddpscope's export: HTA's window as the exported run had it (gpu_time.h).
  int64_t ddpscope_leave_out_last_step = -1;  // -1: not said
  int64_t ddpscope_us_origin_ns = -1;
  int64_t ddpscope_last_step_begin_ns = INT64_MIN;
  std::string ddpscope_host, ddpscope_device;
};

// One trace event with the arguments ddpscope reads; -1 / empty when absent.
struct TraceEvent {
  char ph = 0;  // X (complete), i (instant), M (metadata), s/f (flow), ...
  std::string name, cat;
  double ts_us = 0, dur_us = 0;
  // pid / tid are numbers in Kineto's CPU and GPU rows and strings elsewhere ("CPU
  // functions", "Spans"); a string one keeps its text and has the number -1.
  int64_t pid = -1, tid = -1;
  std::string pid_text, tid_text;
  int64_t external_id = -1, correlation = -1, device = -1, stream = -1, bytes = -1;
  // record_param_comms (newer PyTorch)
  std::string collective, dtype, pg_name, pg_ranks;
  int64_t in_nelems = -1, out_nelems = -1, group_size = -1;
  // The first input's shape and type (record_shapes=True): "Input Dims", "Input type".
  int64_t first_input_numel = -1;
  std::string first_input_type;
  std::string meta_name;  // M events: args.name (a process or thread name)
  std::string args_json;  // every arg as the trace wrote it (a JSON object), for Details
  double value = 0;       // C (counter) events: args.value; NaN when null
  // Args "ddpscope.*" of ddpscope's own export: the span as the run file held it.
  // ds_kind < 0: not an exported span.
  int ds_kind = -1;
  bool ds_metric = false;  // a C event holding one of the run's metrics
  std::string ds_name;
  int64_t ds_iteration = -1, ds_bucket = -1, ds_param = -1, ds_bytes = -1, ds_peer = -1, ds_seq = -1, ds_ctx = -1,
          ds_msg = -1, ds_thread = -1;
};

// Reads `path`, calling on_event for every event in file order; `progress` (optional)
// gets the fraction of the file read and may return false to stop (TraceFileError
// "cancelled"). Returns the header fields found anywhere in the file.
TraceHeader read_torch_trace(const std::string& path, const std::function<void(const TraceEvent&)>& on_event,
                             const std::function<bool(double)>& progress = {});

// Bytes per element of a trace's dtype or input type ("Float", "float", "c10::Half",
// "BFloat16", "long int", "double", ...); 0 when unknown.
int dtype_bytes(const std::string& type);

}  // namespace ddpscope::probes
