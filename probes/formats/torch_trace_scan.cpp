#include "torch_trace_scan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <unordered_map>

#include "ddpscope/error.h"
#include "event.h"

namespace ddpscope::probes::torch_scan {
namespace fs = std::filesystem;

#define IMPORT_ERROR(...) TraceFileError(detail::concat(__VA_ARGS__), __FILE__, __LINE__)

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_gpu_row(const TraceEvent& e) {
  return e.cat == "kernel" || e.cat == "gpu_memcpy" || e.cat == "gpu_memset" || e.cat == "gpu_user_annotation";
}

// HTA's communication kernels: names matching ^nccl or containing ncclKernel (its
// ncclDevKernel_ names match the first).
bool is_comm_kernel(const std::string& name) {
  return starts_with(name, "nccl") || name.find("ncclKernel") != std::string::npos ||
         name.find("ncclDevKernel") != std::string::npos;
}

// "all_reduce" -> "allreduce": the names ddpscope's own process groups give their ops.
std::string op_name(const std::string& backend_op) {
  std::string op = backend_op.substr(backend_op.find(':') + 1);
  static const std::map<std::string, std::string> names = {{"all_reduce", "allreduce"},
                                                           {"all_gather", "allgather"},
                                                           {"all_to_all", "alltoall"},
                                                           {"allreduce_coalesced", "allreduce_coalesced"},
                                                           {"reduce_scatter", "reduce_scatter"}};
  const auto it = names.find(op);
  return it != names.end() ? it->second : op;
}

// A backend's own record of a collective ("gloo:all_reduce", "nccl:broadcast"), not the
// GPU-side copy of an annotation.
bool is_backend_op(const TraceEvent& e) {
  return e.ph == 'X' && e.cat != "gpu_user_annotation" &&
         (starts_with(e.name, "gloo:") || starts_with(e.name, "nccl:"));
}

// c10d's launch of a collective ("c10d::allreduce_"): DDP's bucket allreduces are these.
bool is_c10d_launch(const TraceEvent& e) {
  return e.ph == 'X' && starts_with(e.name, "c10d::") && e.name.back() == '_';
}

std::string thread_key(const TraceEvent& e) {
  return (e.pid_text.empty() ? std::to_string(e.pid) : e.pid_text) + "|" +
         (e.tid_text.empty() ? std::to_string(e.tid) : e.tid_text);
}

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

ThreadSlot& slot_for(FileScan& f, const TraceEvent& e) {
  const std::string key = thread_key(e);
  auto it = f.threads.find(key);
  if (it != f.threads.end()) return it->second;
  DDPSCOPE_CHECK(f.threads.size() < 65535, "'", f.path, "' has more than 65535 threads and streams");
  ThreadSlot s;
  s.index = static_cast<uint16_t>(f.threads.size());
  s.tid = e.tid;
  if (is_gpu_row(e)) {
    s.gpu = true;
    s.name = "GPU " + std::to_string(e.device >= 0 ? e.device : e.pid) + " stream " +
             std::to_string(e.stream >= 0 ? e.stream : e.tid);
  } else {
    s.name = e.tid_text.empty() ? "thread " + std::to_string(e.tid) : e.tid_text;
  }
  return f.threads.emplace(key, s).first->second;
}

int64_t op_bytes(const TraceEvent& e) {
  if (e.in_nelems >= 0 && dtype_bytes(e.dtype) > 0) return e.in_nelems * dtype_bytes(e.dtype);
  if (e.first_input_numel >= 0 && dtype_bytes(e.first_input_type) > 0)
    return e.first_input_numel * dtype_bytes(e.first_input_type);
  return -1;
}

// The profiler closes the step it is in when it stops: a rank that stopped right after
// calling step() (a crash, an early exit) ends with a ProfilerStep#N holding nothing. It
// is not an iteration the rank ran: it stays in the run as a mark, not an iteration.
void drop_empty_last_step(FileScan& f) {
  std::vector<int64_t> begins = std::move(f.cpu_begins);
  if (f.steps.size() < 2) return;
  const auto last = std::max_element(f.steps.begin(), f.steps.end(),
                                     [](auto& a, auto& b) { return a.second.begin < b.second.begin; });
  const int64_t base = f.header.base_time_ns;
  const bool empty = std::none_of(begins.begin(), begins.end(), [&](int64_t t) {
    return t + base >= last->second.begin && t + base <= last->second.end;
  });
  if (!empty) return;
  f.empty_last_step = last->first;
  f.steps.erase(last);
}

namespace {

// The first pass over one file's events. Kineto writes baseTimeNanoseconds before
// traceEvents, but nothing promises it: times stay raw microseconds until the header is
// known (move_onto_clock).
class FirstPass {
 public:
  explicit FirstPass(FileScan& f) : f_(f) {}

  void on_event(const TraceEvent& e) {
    if (e.ph == 'M') return on_metadata(e);
    if (e.ph != 'X') return;
    if (f_.pid == 0 && e.pid > 0 && !is_gpu_row(e)) f_.pid = e.pid;
    slot_for(f_, e);
    if (e.ds_kind >= 0) return;  // a span of ddpscope's export: the second pass takes it as it is
    f_.first_ns = std::min(f_.first_ns, us_to_ns(e.ts_us));
    f_.last_ns = std::max(f_.last_ns, us_to_ns(e.ts_us) + us_to_ns(e.dur_us));
    if (is_gpu_row(e)) {
      if (e.cat == "gpu_user_annotation") note_step(e);
      f_.has_gpu = true;
      if (e.cat == "kernel" && is_comm_kernel(e.name))
        f_.comm_kernel_ends.push_back(us_to_ns(e.ts_us) + us_to_ns(e.dur_us));
      return;
    }
    on_cpu_span(e);
  }

  // Kineto's own thread names, where it gave them, over the scan's.
  void name_threads() {
    for (auto& [key, slot] : f_.threads) {
      const auto n = thread_names_.find(key);
      if (n != thread_names_.end() && !slot.gpu) slot.name = n->second;
    }
  }

 private:
  void on_metadata(const TraceEvent& e) {
    if (e.ds_thread >= 0 && e.name == "thread_name") {
      // ddpscope's export names each track with its thread index: keep both.
      DDPSCOPE_CHECK(e.ds_thread < 65535, "'", f_.path, "' names thread ", e.ds_thread,
                     ", past the 65535 a rank can hold");
      ThreadSlot slot{static_cast<uint16_t>(e.ds_thread), e.meta_name, e.tid, false};
      f_.threads.emplace(thread_key(e), slot);
    } else if (e.name == "thread_name" && !e.meta_name.empty()) {
      // Kineto names a thread twice ("thread 773 (python3)", then its own name).
      std::string& n = thread_names_[thread_key(e)];
      if (n.empty() || e.meta_name.find("(python") == std::string::npos) n = e.meta_name;
    }
  }

  // HTA takes its window from every row named ProfilerStep#N, the GPU's annotations too.
  void note_step(const TraceEvent& e) {
    if (!starts_with(e.name, "ProfilerStep#")) return;
    char* end = nullptr;
    const long long n = std::strtoll(e.name.c_str() + 13, &end, 10);
    if (!end || *end != '\0') return;
    f_.step_numbers.insert(n);
    f_.last_step_begin = std::max(f_.last_step_begin, us_to_ns(e.ts_us));
  }

  void on_cpu_span(const TraceEvent& e) {
    const Span s{us_to_ns(e.ts_us), us_to_ns(e.ts_us) + us_to_ns(e.dur_us)};
    note_step(e);
    if (f_.main_thread.empty() && e.cat == "cpu_op") f_.main_thread = thread_key(e);
    if (!starts_with(e.name, "ProfilerStep#")) f_.cpu_begins.push_back(s.begin);
    if ((e.cat == "cuda_runtime" || e.cat == "cuda_driver") && e.correlation >= 0) {
      f_.launch_time[e.correlation] = s.begin;
    } else if (starts_with(e.name, "ProfilerStep#")) {
      char* end = nullptr;
      const long long n = std::strtoll(e.name.c_str() + 13, &end, 10);
      if (end && *end == '\0') f_.steps[n] = s;
    } else if (e.name == "DistributedDataParallel.forward") {
      f_.forwards.push_back(s);
    } else if (starts_with(e.name, "Optimizer.step#")) {
      f_.optimizer_steps.push_back(s);
    } else if (e.name == "record_param_comms") {
      last_comms_[thread_key(e)] = e;
    } else if (is_backend_op(e)) {
      on_backend_op(e, s);
    } else if (is_c10d_launch(e)) {
      std::string op = e.name.substr(6, e.name.size() - 7);
      f_.launches.push_back({op, s.begin, s.end, op_bytes(e)});
    }
  }

  void on_backend_op(const TraceEvent& e, const Span& s) {
    BackendOp op{op_name(e.name), 0, s.begin, s.end, op_bytes(e)};
    // record_param_comms (newer PyTorch) encloses its backend op on the same thread
    // and names the group and the message size.
    const auto c = last_comms_.find(thread_key(e));
    if (c != last_comms_.end() && e.ts_us >= c->second.ts_us && e.ts_us <= c->second.ts_us + c->second.dur_us) {
      if (!c->second.pg_name.empty()) op.group = group_index(c->second.pg_name);
      if (op_bytes(c->second) >= 0) op.bytes = op_bytes(c->second);
    }
    f_.ops.push_back(op);
  }

  int group_index(const std::string& name) {
    const auto [it, fresh] = group_at_.try_emplace(name, static_cast<int>(f_.group_names.size()));
    if (fresh) f_.group_names.push_back(name);
    if (f_.group_names.size() > 65536)
      throw IMPORT_ERROR("'", f_.path,
                         "' names more than 65536 process groups in its collectives: not a trace "
                         "PyTorch writes; refused");
    return it->second;
  }

  FileScan& f_;
  std::map<std::string, int> group_at_{{"0", 0}};
  std::map<std::string, TraceEvent> last_comms_;  // per thread
  std::unordered_map<std::string, std::string> thread_names_;
};

// Now the header is known: raw microseconds onto the file's clock.
void move_onto_clock(FileScan& f) {
  const int64_t base = f.header.base_time_ns;
  for (auto& [n, s] : f.steps)
    s = {s.begin + base, s.end + base};
  for (auto* list : {&f.forwards, &f.optimizer_steps})
    for (auto& s : *list)
      s = {s.begin + base, s.end + base};
  for (auto& op : f.ops)
    op.begin += base, op.end += base;
  for (auto& l : f.launches)
    l.begin += base, l.end += base;
  for (auto& t : f.comm_kernel_ends)
    t += base;
  for (auto& [c, t] : f.launch_time)
    t += base;
  if (f.last_step_begin != INT64_MIN) f.last_step_begin += base;
  if (f.first_ns <= f.last_ns) f.first_ns += base, f.last_ns += base;
}

// No ProfilerStep: the whole trace is iteration 1 (not for ddpscope's own export, whose
// iterations are its run's, and a run may have none).
void one_step_for_the_whole_trace(FileScan& f) {
  if (!f.steps.empty() || f.header.ddpscope_export || f.first_ns > f.last_ns) return;
  f.steps[1] = {f.first_ns, f.last_ns};
  f.whole_trace_step = true;
}

// Collectives in the order they started, numbered per group; launches matched to the
// backend ops they started (the k-th launch of an op to its k-th backend op).
void match_collectives(FileScan& f) {
  std::stable_sort(f.ops.begin(), f.ops.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  std::map<std::string, int> seq;
  for (auto& op : f.ops)
    op.seq = ++seq[f.group_of(op)];
  std::map<std::string, std::vector<int>> by_op;
  for (size_t i = 0; i < f.ops.size(); ++i)
    by_op[f.ops[i].op].push_back(static_cast<int>(i));
  std::map<std::string, size_t> next;
  std::stable_sort(f.launches.begin(), f.launches.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  for (auto& op : f.ops)
    op.issued = op.begin;
  for (auto& l : f.launches) {
    auto& list = by_op[l.op];
    size_t& k = next[l.op];
    if (k < list.size()) {
      l.backend_index = list[k++];
      BackendOp& op = f.ops[static_cast<size_t>(l.backend_index)];
      op.issued = std::min(op.issued, l.begin);
    }
  }
}

}  // namespace

FileScan scan_file(const std::string& path, const std::function<bool(double)>& progress) {
  FileScan f;
  f.path = path;
  std::error_code ec;
  f.bytes = static_cast<int64_t>(fs::file_size(path, ec));
  FirstPass pass(f);
  f.header = read_torch_trace(
      path, [&](const TraceEvent& e) { pass.on_event(e); }, progress);
  pass.name_threads();
  move_onto_clock(f);
  if (f.header.events == 0) throw IMPORT_ERROR("'", path, "' is a trace with no events; profile at least one step");
  match_collectives(f);
  drop_empty_last_step(f);
  one_step_for_the_whole_trace(f);
  return f;
}

// Each rank's offset onto the reference rank's clock from the instants every rank leaves
// a collective together: the ends of NCCL kernels where the traces have them, else the
// ends of the backend's collective spans. The median difference is the offset; the median
// distance from it, the uncertainty.
std::vector<RankClock> align_clocks(std::vector<FileScan>& files) {
  const bool gpu = std::any_of(files.begin(), files.end(), [](auto& f) { return !f.comm_kernel_ends.empty(); });
  auto points = [&](const FileScan& f) {
    if (gpu) return f.comm_kernel_ends;
    std::vector<int64_t> ends;
    for (const auto& op : f.ops)
      ends.push_back(op.end);
    return ends;
  };
  std::vector<RankClock> clocks;
  const std::vector<int64_t> ref = points(files.front());
  for (auto& f : files) {
    RankClock c{f.rank};
    std::vector<int64_t> mine = points(f);
    std::sort(mine.begin(), mine.end());
    std::vector<int64_t> ref_sorted = ref;
    std::sort(ref_sorted.begin(), ref_sorted.end());
    const size_t n = std::min(mine.size(), ref_sorted.size());
    if (&f == &files.front()) {
      c.uncertainty_ns = 0;
      c.matched_collectives = static_cast<int>(n);
    } else if (n > 0) {
      std::vector<int64_t> diffs(n);
      for (size_t k = 0; k < n; ++k)
        diffs[k] = ref_sorted[k] - mine[k];
      c.offset_ns = median(diffs);
      std::vector<int64_t> spread(n);
      for (size_t k = 0; k < n; ++k)
        spread[k] = std::llabs(diffs[k] - c.offset_ns);
      c.uncertainty_ns = median(spread);
      c.matched_collectives = static_cast<int>(n);
    }
    clocks.push_back(c);
  }
  return clocks;
}

// A collective cannot complete unless every rank of its group entered it: an op that a
// present member of its group never started stays open (the Hang view's "blocked in").
// A group's members are its pg_config ranks where a trace names them; else the default
// group ("0") holds every rank, and another group the ranks that ran its ops.
void mark_unfinished(std::vector<FileScan>& files) {
  // Groups by name, viewed in the files' own lists: one copy of each name, however many ops.
  std::map<std::string_view, std::set<int>> named, ran;  // group -> its pg_config ranks / ranks with its ops
  std::set<int> present;
  std::map<int, std::map<std::string_view, int>> last;  // rank -> group -> last seq it started
  for (const auto& f : files) {
    present.insert(f.rank);
    for (const auto& g : f.header.groups)
      named[g.name].insert(g.ranks.begin(), g.ranks.end());
    for (const auto& op : f.ops) {
      int& l = last[f.rank][f.group_of(op)];
      l = std::max(l, op.seq);
      ran[f.group_of(op)].insert(f.rank);
    }
  }
  auto members_of = [&](std::string_view g) -> const std::set<int>& {
    if (const auto it = named.find(g); it != named.end()) return it->second;
    return g == "0" ? present : ran[g];
  };
  std::map<std::string_view, int> reached;  // group -> the lowest last seq over its present members
  for (const auto& [g, ranks] : ran) {
    int lowest = INT32_MAX;
    for (int r : members_of(g)) {
      if (!present.count(r)) continue;  // no trace of that rank: nothing to say
      const auto it = last[r].find(g);
      lowest = std::min(lowest, it == last[r].end() ? 0 : it->second);
    }
    reached[g] = lowest;
  }
  for (auto& f : files)
    for (auto& op : f.ops)
      op.completed = op.seq <= reached[f.group_of(op)];
}

void check_same_job(const std::vector<FileScan>& files) {
  const FileScan* first_dist = nullptr;
  for (const auto& f : files) {
    if (!f.header.has_dist_info) continue;
    if (!first_dist) {
      first_dist = &f;
      continue;
    }
    const TraceHeader& a = first_dist->header;
    const TraceHeader& b = f.header;
    if (a.world_size != b.world_size || a.backend != b.backend)
      throw IMPORT_ERROR("'", first_dist->path, "' and '", f.path, "' are traces of different jobs (world size ",
                         a.world_size, " with ", a.backend, " against ", b.world_size, " with ", b.backend,
                         "); import one job's traces at a time");
  }
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].header.list_form != files[0].header.list_form)
      throw IMPORT_ERROR("'", files[0].path, "' and '", files[i].path,
                         "' are of different trace forms (one from a PyTorch with Kineto, one "
                         "without): they cannot be of one job; import one job's traces at a time");
  }
}

}  // namespace ddpscope::probes::torch_scan
