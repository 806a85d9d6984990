#include "flight_recorder.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "collector_protocol.h"
#include "ddpscope/env.h"
#include "ddpscope/log.h"
#include "flight_dump_format.h"
#include "probe.h"
#include "records.h"

namespace ddpscope::probes {
namespace {

namespace fk = flight_keys;

constexpr int kMaxGroups = 256;
// Recorders live for the process (never freed): the signal handler walks this array.
FlightRecorder* g_recorders[kMaxGroups];
std::atomic<int> g_recorder_count{0};
std::mutex g_create_mutex;

std::atomic<const char*> g_phase{""};

char g_dump_path[4096];  // "" until set_dump_path
int g_dump_rank = 0;
std::atomic<bool> g_dumping{false};
// The first timeout's reason and time: a later dump (the job's SIGTERM, a crash) rewrites
// the file with fresher records but keeps saying that this rank timed out, and when: the
// verdict tells a rank that waited from one that did not by it.
char g_timeout_reason[2048];
std::atomic<int64_t> g_timeout_ns{0};
std::atomic<int64_t> g_stall_ns{0}, g_stall_end_ns{0};

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

// Writes the dump's JSON through a fixed buffer: no allocation, no lock, so a signal
// handler may use it. Output goes to a file descriptor, or (outside handlers) a string.
struct FlightDumpWriter {
  char buf[16384];
  size_t used = 0;
  int fd = -1;
  std::string* out = nullptr;
  bool failed = false;

  void flush() {
    if (out) {
      out->append(buf, used);
    } else if (fd >= 0) {
      size_t done = 0;
      while (done < used) {
        const ssize_t n = ::write(fd, buf + done, used - done);
        if (n <= 0) {
          failed = true;
          break;
        }
        done += static_cast<size_t>(n);
      }
    }
    used = 0;
  }
  void raw(const char* s) {
    for (; *s; ++s)
      put(*s);
  }
  void put(char c) {
    if (used == sizeof buf) flush();
    buf[used++] = c;
  }
  void str(const char* s) {
    put('"');
    for (; *s; ++s) {
      const auto c = static_cast<unsigned char>(*s);
      if (c == '"' || c == '\\') {
        put('\\');
        put(static_cast<char>(c));
      } else if (c < 0x20) {
        static const char hex[] = "0123456789abcdef";
        raw("\\u00");
        put(hex[c >> 4]);
        put(hex[c & 15]);
      } else {
        put(static_cast<char>(c));
      }
    }
    put('"');
  }
  void num(int64_t v) {
    char digits[24];
    int n = 0;
    uint64_t u = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
    do {
      digits[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (v < 0) put('-');
    while (n)
      put(digits[--n]);
  }
  void key(const char* k) {
    str(k);
    put(':');
  }
  // [[d0, d1], [d0, d1]]: one shape per tensor, as PyTorch's dumps list them.
  void sizes(const TensorsSummary& t) {
    put('[');
    for (int32_t i = 0; i < t.count; ++i) {
      if (i) put(',');
      put('[');
      if (i == 0 || t.same_shape) {
        for (int d = 0; d < std::min(t.ndim, TensorsSummary::kMaxDims); ++d) {
          if (d) put(',');
          num(t.dims[d]);
        }
      }
      put(']');
    }
    put(']');
  }
  void dtypes(const TensorsSummary& t) {
    put('[');
    for (int32_t i = 0; i < t.count; ++i) {
      if (i) put(',');
      str(t.dtype);
    }
    put(']');
  }
  void entry(const CollectiveRecord& r, const FlightRecorder& fr, int64_t clock_skew_ns) {
    const TensorsSummary& out_side = r.output.count > 0 ? r.output : r.input;
    const bool p2p = r.collective_seq < 0;
    put('{');
    key(fk::record_id), num(r.record_id), put(',');
    key(fk::pg_id), num(fr.pg_id()), put(',');
    key(fk::process_group), put('['), str(fr.group().name.c_str()), put(','), str(fr.group().desc.c_str()), raw("],");
    key(fk::collective_seq_id), num(p2p ? 0 : r.collective_seq), put(',');
    key(fk::p2p_seq_id), num(p2p ? r.p2p_seq : 0), put(',');
    key(fk::op_id), num(r.record_id), put(',');
    key(fk::profiling_name), put('"'), raw("ddpscope:"), raw(r.op);
    if (p2p && r.peer >= 0) {  // PyTorch's form: "send src->dst", "recv dst<-src"
      const bool send = std::strcmp(r.op, "send") == 0;
      put(' '), num(fr.group().rank_in_group), raw(send ? "->" : "<-"), num(r.peer);
    }
    raw("\",");
    key(fk::is_p2p), raw(p2p ? "true," : "false,");
    key(fk::input_sizes), sizes(r.input), put(',');
    key(fk::output_sizes), sizes(out_side), put(',');
    key(fk::input_dtypes), dtypes(r.input), put(',');
    key(fk::output_dtypes), dtypes(out_side), put(',');
    if (!r.input.same_shape) key(fk::input_numel), num(r.input.total_numel), put(',');
    key(fk::state), str(collective_state_name(r.state)), put(',');
    key(fk::time_created_ns), num(r.t_created_ns + clock_skew_ns), put(',');
    key(fk::time_started_ns);
    r.t_started_ns ? num(r.t_started_ns + clock_skew_ns) : raw("null");
    put(',');
    key(fk::time_completed_ns);
    r.t_completed_ns ? num(r.t_completed_ns + clock_skew_ns) : raw("null");
    put(',');
    key(fk::retired), raw(r.state == CollectiveState::Completed ? "true," : "false,");
    key(fk::duration_ms);
    if (r.t_completed_ns && r.t_started_ns) {
      const int64_t us = (r.t_completed_ns - r.t_started_ns) / 1000;
      num(us / 1000), put('.');
      const int64_t frac = us % 1000;
      put(static_cast<char>('0' + frac / 100)), put(static_cast<char>('0' + frac / 10 % 10)),
          put(static_cast<char>('0' + frac % 10));
    } else {
      raw("null");
    }
    put(',');
    key(fk::timeout_ms), num(r.timeout_ms), put(',');
    key(fk::phase), str(r.phase), put(',');
    key(fk::iteration), num(r.iteration), put(',');
    key(fk::frames), raw("[]}");
  }
  // The whole dump, every group's records: PyTorch's top-level form.
  void dump(const char* reason, const char* trigger, int rank, int64_t now_ns) {
    put('{'), key(fk::version), str(fk::kWrittenVersion), put(','), key(fk::producer), str(fk::kProducerName), put(',');
    key(fk::rank), num(rank), put(',');
    key(fk::dump_reason), str(reason), put(',');
    key(fk::dump_trigger), str(trigger), put(',');
    if (const int64_t stall = g_stall_ns.load(); stall > 0)
      key(fk::stall_ns), num(stall), put(','), key(fk::stall_end_ns), num(g_stall_end_ns.load()), put(',');
    key(fk::dump_time_ns), num(now_ns), put(',');
    const int n = std::min(g_recorder_count.load(), kMaxGroups);
    key(fk::pg_config), put('{');
    for (int i = 0; i < n; ++i) {
      const FlightRecorder& fr = *g_recorders[i];
      if (i) put(',');
      key(fr.group().name.c_str());
      put('{'), key(fk::group_name), str(fr.group().name.c_str()), put(','), key(fk::group_desc),
          str(fr.group().desc.c_str()), put(','), key(fk::group_ranks), put('[');
      for (size_t k = 0; k < fr.group().ranks.size(); ++k) {
        if (k) put(',');
        num(fr.group().ranks[k]);
      }
      raw("]}");
    }
    raw("},");
    key(fk::entries), put('[');
    bool first = true;
    for (int i = 0; i < n; ++i) {
      const FlightRecorder& fr = *g_recorders[i];
      // Oldest first: the ring's slots from the oldest id still held.
      const int64_t end = fr.next_id_, begin = std::max<int64_t>(0, end - fr.capacity_);
      for (int64_t id = begin; id < end; ++id) {
        const CollectiveRecord& r = fr.ring_[static_cast<size_t>(id % fr.capacity_)];
        if (r.record_id != id) continue;
        if (!first) put(',');
        first = false;
        entry(r, fr, 0);
      }
    }
    raw("]}\n");
    flush();
  }
};

const char* collective_state_name(CollectiveState s) {
  switch (s) {
    case CollectiveState::Scheduled: return "scheduled";
    case CollectiveState::Started: return "started";
    case CollectiveState::Completed: return "completed";
  }
  return "?";
}

void set_phase(const char* phase) noexcept { g_phase.store(phase, std::memory_order_relaxed); }
const char* current_phase() noexcept { return g_phase.load(std::memory_order_relaxed); }

std::string flight_dump_path(const std::string& run_file, int rank) {
  return run_file + ".fr_rank_" + std::to_string(rank) + ".json";
}

FlightRecorder::FlightRecorder(int pg_id, GroupDescription group, int64_t capacity)
    : pg_id_(pg_id), group_(std::move(group)), capacity_(capacity) {
  ring_.resize(static_cast<size_t>(std::max<int64_t>(capacity_, 0)));
}

FlightRecorder& FlightRecorder::create(GroupDescription group) {
  static const int64_t capacity = env_int("DDPSCOPE_FR_BUFFER_SIZE", 2000, 0, 10'000'000);
  std::lock_guard<std::mutex> lock(g_create_mutex);
  const int id = g_recorder_count.load();
  if (id >= kMaxGroups) {
    // Past the table the signal handler walks: this group goes unrecorded rather than
    // failing its creation (a job that makes groups in a loop keeps running).
    static std::once_flag warned;
    std::call_once(warned, [] {
      log::warn("flight recorder: more than {} process groups in this process; later ones are not recorded",
                kMaxGroups);
    });
    return *new FlightRecorder(-1, std::move(group), 0);
  }
  auto* fr = new FlightRecorder(id, std::move(group), capacity);
  g_recorders[id] = fr;
  g_recorder_count.store(id + 1);
  if (id == 0) {
    // The process's first group (the world) knows its global rank: the dump file's name.
    const GroupDescription& g = fr->group();
    const int rank = g.rank_in_group < static_cast<int>(g.ranks.size()) ? g.ranks[g.rank_in_group] : g.rank_in_group;
    if (const char* prefix = std::getenv(kFlightDumpEnv); prefix && *prefix && capacity > 0) {
      set_dump_path(prefix + std::to_string(rank) + ".json", rank);
      install_signal_dump();
    }
  }
  return *fr;
}

std::vector<FlightRecorder*> FlightRecorder::all() {
  const int n = g_recorder_count.load();
  return {g_recorders, g_recorders + n};
}

int64_t FlightRecorder::schedule(const CollectiveRecord& record) {
  if (capacity_ <= 0) return -1;
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t id = next_id_++;
  CollectiveRecord& r = ring_[static_cast<size_t>(id % capacity_)];
  r = record;
  r.record_id = id;
  r.state = CollectiveState::Scheduled;
  r.t_created_ns = monotonic_ns();
  r.phase = current_phase();
  r.iteration = current_iteration();
  mark_changed(id);
  return id;
}

CollectiveRecord* FlightRecorder::find(int64_t record_id) {
  if (record_id < 0 || record_id < next_id_ - capacity_) return nullptr;
  CollectiveRecord& r = ring_[static_cast<size_t>(record_id % capacity_)];
  return r.record_id == record_id ? &r : nullptr;
}

void FlightRecorder::start(int64_t record_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (CollectiveRecord* r = find(record_id)) {
    r->state = CollectiveState::Started;
    r->t_started_ns = monotonic_ns();
    mark_changed(record_id);
  }
}

void FlightRecorder::complete(int64_t record_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (CollectiveRecord* r = find(record_id)) {
    r->state = CollectiveState::Completed;
    r->t_completed_ns = monotonic_ns();
    if (!r->t_started_ns) r->t_started_ns = r->t_completed_ns;
    mark_changed(record_id);
  }
}

void FlightRecorder::mark_changed(int64_t record_id) {
  // Only while a session ships: with probes off nothing would ever take them.
  if (enabled() && (changed_.empty() || changed_.back() != record_id)) changed_.push_back(record_id);
}

std::vector<CollectiveRecord> FlightRecorder::records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CollectiveRecord> out;
  for (int64_t id = std::max<int64_t>(0, next_id_ - capacity_); id < next_id_; ++id) {
    const CollectiveRecord& r = ring_[static_cast<size_t>(id % capacity_)];
    if (r.record_id == id) out.push_back(r);
  }
  return out;
}

std::vector<std::string> FlightRecorder::take_changes(int64_t clock_skew_ns) {
  std::vector<std::string> out;
  for (FlightRecorder* fr : all()) {
    std::vector<CollectiveRecord> changed;
    bool describe = false;
    {
      std::lock_guard<std::mutex> lock(fr->mutex_);
      describe = !fr->described_ && (enabled() || !fr->changed_.empty());
      fr->described_ = fr->described_ || describe;
      std::sort(fr->changed_.begin(), fr->changed_.end());
      fr->changed_.erase(std::unique(fr->changed_.begin(), fr->changed_.end()), fr->changed_.end());
      for (int64_t id : fr->changed_)
        if (CollectiveRecord* r = fr->find(id)) changed.push_back(*r);
      fr->changed_.clear();
    }
    if (describe) {
      FlightDumpWriter w;
      std::string text;
      w.out = &text;
      w.raw("{\"type\":\"process_group\",\"pg_id\":"), w.num(fr->pg_id_), w.raw(",\"name\":"),
          w.str(fr->group_.name.c_str()), w.raw(",\"desc\":"), w.str(fr->group_.desc.c_str()), w.raw(",\"ranks\":[");
      for (size_t k = 0; k < fr->group_.ranks.size(); ++k) {
        if (k) w.put(',');
        w.num(fr->group_.ranks[k]);
      }
      w.raw("]}");
      w.flush();
      out.push_back(std::move(text));
    }
    for (const CollectiveRecord& r : changed) {
      FlightDumpWriter w;
      std::string text;
      w.out = &text;
      w.raw("{\"type\":\"collective\",\"entry\":");
      w.entry(r, *fr, clock_skew_ns);
      w.put('}');
      w.flush();
      out.push_back(std::move(text));
    }
  }
  return out;
}

void FlightRecorder::set_dump_path(const std::string& path, int global_rank) {
  std::snprintf(g_dump_path, sizeof g_dump_path, "%s", path.c_str());
  g_dump_rank = global_rank;
}

namespace {

// Writes the dump to a temporary name, then renames it into place: a reader never sees
// half a file. Async-signal-safe (open, write, rename, close).
bool write_dump_file(const char* reason, const char* trigger) {
  if (!g_dump_path[0]) return false;
  int64_t when = monotonic_ns();
  if (const int64_t t = g_timeout_ns.load(); t != 0) {
    reason = g_timeout_reason;
    trigger = "timeout";
    when = t;
  }
  char tmp[sizeof g_dump_path + 8];
  std::snprintf(tmp, sizeof tmp, "%s.part", g_dump_path);
  const int fd = ::open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  static FlightDumpWriter w;  // 16 KiB: not on a signal handler's stack
  w.used = 0;
  w.out = nullptr;
  w.fd = fd;
  w.failed = false;
  w.dump(reason, trigger, g_dump_rank, when);
  ::close(fd);
  if (w.failed) {
    ::unlink(tmp);
    return false;
  }
  return ::rename(tmp, g_dump_path) == 0;
}

struct sigaction g_previous[32];
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  if (!g_dumping.exchange(true)) {
    const char* reason = sig == SIGTERM ? "signal: SIGTERM (the job is being ended)" : "signal: fatal signal";
    write_dump_file(reason, sig == SIGTERM ? "sigterm" : "signal");
  }
  // Hand the signal on: the previous handler (OpenMPI's backtrace), or the default action.
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) {
      prev.sa_sigaction(sig, info, context);
      return;
    }
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

std::string FlightRecorder::dump_all(const std::string& reason, const char* trigger) {
  if (g_dumping.exchange(true)) return {};
  if (std::strcmp(trigger, "timeout") == 0 && g_timeout_ns.load() == 0) {
    std::snprintf(g_timeout_reason, sizeof g_timeout_reason, "%s", reason.c_str());
    g_timeout_ns = monotonic_ns();
  }
  const bool written = write_dump_file(reason.c_str(), trigger);
  g_dumping = false;
  // The run file learns of the dump too, when the collector is still there to take it.
  FlightDumpWriter w;
  std::string text;
  w.out = &text;
  w.raw("{\"type\":\"flight_dump\",\"reason\":"), w.str(reason.c_str()), w.raw(",\"trigger\":"), w.str(trigger);
  w.raw(",\"t_ns\":"), w.num(monotonic_ns());
  if (const int64_t stall = g_stall_ns.load(); stall > 0)
    w.raw(",\"stall_ns\":"), w.num(stall), w.raw(",\"stall_end_ns\":"), w.num(g_stall_end_ns.load());
  w.raw(",\"file\":"), w.str(written ? g_dump_path : ""), w.put('}');
  w.flush();
  queue_record(std::move(text));
  return written ? std::string(g_dump_path) : std::string();
}

void FlightRecorder::note_stall(int64_t late_ns) noexcept {
  if (late_ns < 500'000'000 || late_ns <= g_stall_ns.load()) return;
  g_stall_ns = late_ns;
  g_stall_end_ns = monotonic_ns();
}

void FlightRecorder::install_signal_dump() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : kFatalSignals) {
      struct sigaction sa {};
      sa.sa_sigaction = on_fatal_signal;
      sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, &g_previous[sig]);
    }
  });
}

}  // namespace ddpscope::probes
