// The first pass of a PyTorch trace import (torch_trace_import.cpp): what each rank's
// file holds (steps, collectives, threads, GPU streams), the ranks' clocks aligned onto
// one, and the collectives some member of their group never entered. Internal to the
// probes library.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "torch_trace_import.h"
#include "torch_trace_reader.h"

namespace ddpscope::probes::torch_scan {

struct Span {
  int64_t begin = 0, end = 0;
};

struct BackendOp {
  std::string op;
  int group = 0;  // its FileScan's group_names[group]: one copy a group, not one an op
  int64_t begin = 0, end = 0, bytes = -1;
  int seq = 0;  // within its group, from 1
  bool completed = true;
  // When the rank issued it: the c10d launch that started it (DDP's bucket allreduce can
  // wait in the backend's queue long before gloo's thread takes it up), else its begin.
  int64_t issued = 0;
};

struct Launch {
  std::string op;
  int64_t begin = 0, end = 0, bytes = -1;
  int backend_index = -1;  // the backend op it started (the k-th of its op)
};

struct ThreadSlot {
  uint16_t index = 0;
  std::string name;
  int64_t tid = 0;
  bool gpu = false;  // named "GPU d stream s" here, not by the trace's "stream s"
};

// Microseconds to nanoseconds, exact for the whole microseconds: Kineto's times since
// the epoch (1.7e15 us) times 1000 pass 2^53, where a double's steps are 256 ns, and
// kernels of a few microseconds lost up to 3% of their length that way.
inline int64_t us_to_ns(double us) {
  const double whole = std::floor(us);
  return static_cast<int64_t>(whole) * 1000 + std::llround((us - whole) * 1000.0);
}

// What the first pass learns of one file.
struct FileScan {
  std::string path;
  TraceHeader header;
  int rank = -1;
  int64_t pid = 0;
  std::map<int64_t, Span> steps;  // ProfilerStep#N
  std::vector<Span> forwards, optimizer_steps;
  std::vector<BackendOp> ops;                 // in file order, then sorted by begin
  std::vector<std::string> group_names{"0"};  // ops' groups ("0": the default group)
  const std::string& group_of(const BackendOp& op) const { return group_names[static_cast<size_t>(op.group)]; }
  std::vector<Launch> launches;
  std::vector<int64_t> comm_kernel_ends;
  std::unordered_map<int64_t, int64_t> launch_time;  // correlation -> CUDA call begin
  std::map<std::string, ThreadSlot> threads;
  bool has_gpu = false;
  int64_t bytes = 0;
  // Begins of the CPU events (ProfilerStep aside), to tell an empty last step; freed
  // once the scan is done.
  std::vector<int64_t> cpu_begins;
  int64_t empty_last_step = -1;  // a last ProfilerStep#N with nothing in it: N
  // HTA's window (gpu_time.h): the latest begin of a ProfilerStep#N row, on the CPU or
  // as the GPU's annotation of it, and the step numbers named in either.
  int64_t last_step_begin = INT64_MIN;
  std::set<int64_t> step_numbers;
  // A trace with no ProfilerStep (profiled without a schedule) is one iteration, as
  // TensorBoard and HTA take it: steps then holds one, over every event of the file.
  bool whole_trace_step = false;
  int64_t first_ns = INT64_MAX, last_ns = INT64_MIN;  // the file's events
  std::string main_thread;                            // thread_key of its first CPU op

  int64_t time_ns(double ts_us) const { return header.base_time_ns + us_to_ns(ts_us); }
};

// The iteration containing a time: steps are few, so a sorted list and a binary search.
class StepIndex {
 public:
  explicit StepIndex(const std::map<int64_t, Span>& steps) {
    for (const auto& [n, s] : steps)
      list_.push_back({s.begin, s.end, n});
    std::sort(list_.begin(), list_.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  }
  int at(int64_t t) const {
    auto it = std::upper_bound(list_.begin(), list_.end(), t, [](int64_t v, const Entry& e) { return v < e.begin; });
    if (it == list_.begin()) return -1;
    --it;
    return t <= it->end ? static_cast<int>(it->n) : -1;
  }

 private:
  struct Entry {
    int64_t begin, end, n;
  };
  std::vector<Entry> list_;
};

bool starts_with(const std::string& s, const char* prefix);
bool is_gpu_row(const TraceEvent& e);
// HTA's communication kernels: names matching ^nccl or containing ncclKernel.
bool is_comm_kernel(const std::string& name);
// "all_reduce" -> "allreduce": the names ddpscope's own process groups give their ops.
std::string op_name(const std::string& backend_op);
// A backend's own record of a collective ("gloo:all_reduce"), not a GPU-side annotation.
bool is_backend_op(const TraceEvent& e);
// c10d's launch of a collective ("c10d::allreduce_"): DDP's bucket allreduces are these.
bool is_c10d_launch(const TraceEvent& e);
std::string thread_key(const TraceEvent& e);
int64_t median(std::vector<int64_t> v);
// The thread or GPU stream of an event, numbered in order of appearance.
ThreadSlot& slot_for(FileScan& f, const TraceEvent& e);
int64_t op_bytes(const TraceEvent& e);

// Reads one rank's file; `progress` gets the fraction read and returns false to cancel.
FileScan scan_file(const std::string& path, const std::function<bool(double)>& progress);
// Each rank's offset onto the reference rank's clock.
std::vector<RankClock> align_clocks(std::vector<FileScan>& files);
// Collectives that a present member of their group never started stay open.
void mark_unfinished(std::vector<FileScan>& files);
// The files are the ranks of one job (one world size, no rank twice).
void check_same_job(const std::vector<FileScan>& files);

}  // namespace ddpscope::probes::torch_scan
