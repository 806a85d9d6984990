#include "flight_import.h"

#include "atomic_file.h"
#include "flight_dump_format.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "ddpscope/error.h"
#include "run_store_writer.h"
#include "torch_trace_reader.h"
#include "torch_trace_scan.h"

namespace ddpscope::probes {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void import_error(const std::string& what) { throw RunStoreError(what, __FILE__, __LINE__); }

// Every dump, one at a time, handed to `take` (one dump per rank).
void read_each(const std::vector<std::string>& paths, const std::function<void(FlightDump&&)>& take) {
  if (paths.empty()) import_error("no flight-recorder dumps given");
  std::map<int, std::string> seen;
  for (const std::string& p : paths) {
    // A file with no rank in it or its name takes its place in the list.
    FlightDump d = read_flight_dump(p, static_cast<int>(seen.size()));
    if (const auto it = seen.find(d.rank); it != seen.end())
      import_error(
          detail::concat("'", it->second, "' and '", p, "' are both rank ", d.rank, "'s dump; give one dump per rank"));
    seen[d.rank] = p;
    take(std::move(d));
  }
}

std::vector<FlightDump> read_all(const std::vector<std::string>& paths) {
  std::vector<FlightDump> dumps;
  read_each(paths, [&](FlightDump&& d) { dumps.push_back(std::move(d)); });
  std::sort(dumps.begin(), dumps.end(), [](const FlightDump& a, const FlightDump& b) { return a.rank < b.rank; });
  return dumps;
}

int64_t call_bytes(const CollectiveRow& r) {
  int64_t elements = 0;
  for (const auto& shape : r.input_sizes) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    elements += n;
  }
  const int size = r.input_dtypes.empty() ? 0 : dtype_bytes(r.input_dtypes.front());
  return size > 0 ? elements * size : -1;
}

// Each record with times as a process-group op on the rank's timeline: a span once it
// completed (an instant when the dump has no end time), its start when it did not (what
// the hang view reads as still running).
EventBatch timeline_of(const FlightDump& d) {
  EventBatch b;
  b.rank = d.rank;
  b.threads = {{0, 0, "collectives (flight recorder)"}};
  std::map<std::string, uint32_t> names;
  for (const CollectiveRow& r : d.entries) {
    const int64_t begin = r.t_started_ns > 0 ? r.t_started_ns : r.t_created_ns;
    if (begin <= 0) continue;
    const std::string op = torch_scan::op_name(r.op);
    auto [it, added] = names.emplace(op, static_cast<uint32_t>(b.names.size()));
    if (added) b.names.emplace_back(op);
    // gloo's recorder tracks no end: its completed records have no completion time, and
    // are an instant here (still running would make every rank wait in #1 of some group).
    const bool done = r.t_completed_ns >= begin || r.state == "completed";
    BatchEvent e{begin,
                 r.t_completed_ns >= begin ? r.t_completed_ns : begin,
                 call_bytes(r),
                 r.is_p2p() ? r.p2p_seq : r.collective_seq,
                 -1,
                 -1,
                 -1,
                 it->second,
                 -1,
                 -1,
                 0,
                 static_cast<uint8_t>(done ? Kind::PgOp : Kind::PgOpStart),
                 0};
    b.events.push_back(e);
  }
  std::sort(b.events.begin(), b.events.end(),
            [](const BatchEvent& x, const BatchEvent& y) { return x.t_begin_ns < y.t_begin_ns; });
  return b;
}

}  // namespace

FlightData read_flight_dumps(const std::vector<std::string>& paths) {
  // One dump at a time, its rows moved in: the peak is the records once, not twice.
  FlightData data;
  read_each(paths, [&](FlightDump&& d) { data.add(std::move(d)); });
  data.sort();
  return data;
}

FlightImportResult import_flight_dumps(const std::vector<std::string>& paths, const std::string& out, bool force) {
  std::error_code ec;
  if (fs::exists(out, ec) && !force)
    import_error(detail::concat("'", out, "' exists; pass --force to replace it or choose another --out"));
  for (const std::string& p : paths)
    if (fs::equivalent(p, out, ec))
      import_error(detail::concat("--out '", out, "' is one of the dumps; choose another path"));
  const std::vector<FlightDump> dumps = read_all(paths);
  FlightImportResult result;
  bool pending = false;
  for (const FlightDump& d : dumps) {
    result.ranks.push_back(d.rank);
    result.world_size = std::max(result.world_size, d.rank + 1);
    result.records += static_cast<int64_t>(d.entries.size());
    for (const GroupRow& g : d.groups)
      for (int r : g.ranks)
        result.world_size = std::max(result.world_size, r + 1);
    for (const CollectiveRow& r : d.entries)
      pending = pending || r.state_order() < 2;
  }
  // Every rank below the world's size (the highest rank dumped or named by a group) is
  // expected; gloo's dumps name no group members, so this catches what they cannot.
  std::vector<int> absent;
  for (int r = 0; r < result.world_size; ++r)
    if (!std::binary_search(result.ranks.begin(), result.ranks.end(), r)) absent.push_back(r);
  if (!absent.empty())
    result.notes.push_back(detail::concat("no dump of rank", absent.size() > 1 ? "s " : " ", rank_ranges_text(absent),
                                          ": the verdict knows only what the other ranks recorded"));
  AtomicFile file(out, ".importing");
  {
    RunStoreWriter writer(file.partial());
    const bool torch = dumps.front().producer != flight_keys::kProducerName;
    writer.begin_run({.config_json = "{}",
                      .world_size = result.world_size,
                      .backend = torch ? "pytorch (flight recorder)" : "ddpscope (flight recorder)",
                      .model = ""});
    for (const FlightDump& d : dumps) {
      writer.write(timeline_of(d));
      writer.store_flight_dump(d, torch ? "torch" : "dump", true);
    }
    std::string message =
        detail::concat("imported from ", dumps.size(), " flight-recorder dump", dumps.size() > 1 ? "s" : "");
    if (pending) message += "; collectives were still pending when they were written";
    for (const std::string& n : result.notes)
      message += "; " + n;
    writer.end_run(pending ? "failed" : "finished", message);
    writer.fold_wal();
  }
  file.commit();  // a failed rename leaves no .importing behind (it did: the rename was outside the cleanup)
  return result;
}

}  // namespace ddpscope::probes
