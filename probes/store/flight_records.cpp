#include "flight_records.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "ddpscope/error.h"
#include "sqlite_db.h"

namespace ddpscope::probes {
namespace {

using nlohmann::json;

// A JSON number as an integer; a float or an unsigned out of int64's range is an error
// (converting it would be undefined behaviour).
int64_t to_int(const json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned() && v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= -9.2e18 && d <= 9.2e18) return static_cast<int64_t>(d);
  }
  throw json::type_error::create(302, "a number out of range, or not a number", &v);
}

int64_t int_or(const json& e, const char* key, int64_t fallback) {
  const auto it = e.find(key);
  if (it == e.end() || it->is_null()) return fallback;
  if (it->is_number()) return to_int(*it);
  if (it->is_string()) {  // some writers quote ids
    const std::string& text = it->get_ref<const std::string&>();
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) return value;
  }
  throw json::type_error::create(302, std::string("\"") + key + "\" must be a number", &e);
}

std::string text_or(const json& e, const char* key, const std::string& fallback = {}) {
  const auto it = e.find(key);
  return it == e.end() || !it->is_string() ? fallback : it->get<std::string>();
}

std::vector<std::vector<int64_t>> sizes_of(const json& e, const char* key) {
  std::vector<std::vector<int64_t>> out;
  const auto it = e.find(key);
  if (it == e.end() || it->is_null()) return out;
  for (const auto& shape : *it) {
    std::vector<int64_t> dims;
    for (const auto& d : shape)
      dims.push_back(to_int(d));
    out.push_back(std::move(dims));
  }
  return out;
}

std::vector<std::string> dtypes_of(const json& e, const char* key) {
  std::vector<std::string> out;
  const auto it = e.find(key);
  if (it == e.end() || it->is_null()) return out;
  for (const auto& d : *it)
    out.push_back(d.is_string() ? d.get<std::string>() : d.dump());
  return out;
}

// "nccl:all_reduce" -> "all_reduce"; "nccl:send 0->1" -> "send".
std::string op_of(const std::string& profiling_name) {
  const size_t colon = profiling_name.find(':');
  std::string op = colon == std::string::npos ? profiling_name : profiling_name.substr(colon + 1);
  if (const size_t space = op.find(' '); space != std::string::npos) op.resize(space);
  return op;
}

}  // namespace

void parse_p2p_ends(CollectiveRow& r) {
  const std::string& name = r.profiling_name;
  const size_t space = name.find(' ');
  if (space == std::string::npos) return;
  const std::string meta = name.substr(space + 1);
  const bool recv = r.op == "recv";
  const size_t arrow = meta.find(recv ? "<-" : "->");
  if (arrow == std::string::npos) return;
  const auto number = [](const std::string& t, int& out) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return ec == std::errc() && end == t.data() + t.size() && out >= 0;
  };
  int a = -1, b = -1;
  if (!number(meta.substr(0, arrow), a) || !number(meta.substr(arrow + 2), b)) return;
  r.p2p_src = recv ? b : a;
  r.p2p_dst = recv ? a : b;
}

int CollectiveRow::state_order() const {
  if (state == "scheduled") return 0;
  if (state == "started") return 1;
  if (state == "completed") return 2;
  return -1;
}

CollectiveRow collective_from_entry(const json& e, int rank) {
  CollectiveRow r;
  r.rank = rank;
  r.record_id = int_or(e, "record_id", 0);
  r.pg_id = int_or(e, "pg_id", 0);
  if (const auto pg = e.find("process_group"); pg != e.end() && pg->is_array() && !pg->empty()) {
    r.pg_name = (*pg)[0].is_string() ? (*pg)[0].get<std::string>() : (*pg)[0].dump();
    if (pg->size() > 1 && (*pg)[1].is_string()) r.pg_desc = (*pg)[1].get<std::string>();
  } else {
    r.pg_name = std::to_string(r.pg_id);
  }
  r.profiling_name = text_or(e, "profiling_name");
  r.op = op_of(r.profiling_name);
  const bool p2p = e.value("is_p2p", false) || r.op == "send" || r.op == "recv";
  const auto number = [&](const char* key) { return std::clamp<int64_t>(int_or(e, key, 0), 0, int64_t{1} << 61); };
  if (p2p) {
    r.p2p_seq = number("p2p_seq_id");
    if (const auto it = e.find("collective_seq_id"); it != e.end() && it->is_number())
      r.last_collective_seq = to_int(*it);
    parse_p2p_ends(r);
  } else {
    r.collective_seq = number("collective_seq_id");
  }
  r.input_sizes = sizes_of(e, "input_sizes");
  r.output_sizes = sizes_of(e, "output_sizes");
  r.input_dtypes = dtypes_of(e, "input_dtypes");
  r.output_dtypes = dtypes_of(e, "output_dtypes");
  r.state = text_or(e, "state", "scheduled");
  // Bounded so that sums of times and offsets cannot overflow: 2^61 ns is 73 years past
  // any clock's start; a timeout over 10^9 ms (11 days) is taken as 10^9.
  const auto time = [&](const char* key) { return std::clamp<int64_t>(int_or(e, key, 0), 0, int64_t{1} << 61); };
  r.t_created_ns = time("time_created_ns");
  r.t_started_ns = time("time_discovered_started_ns");
  r.t_completed_ns = time("time_discovered_completed_ns");
  r.timeout_ms = std::clamp<int64_t>(int_or(e, "timeout_ms", 0), 0, 1'000'000'000);
  r.phase = text_or(e, "phase");
  r.iteration = int_or(e, "iteration", -1);
  if (const auto frames = e.find("frames"); frames != e.end() && frames->is_array()) {
    for (const auto& f : *frames) {
      if (!f.is_object()) continue;
      r.frames.push_back({text_or(f, "name"), text_or(f, "filename"), int_or(f, "line", 0), {}});
    }
  }
  return r;
}

void FlightData::add(const FlightDump& dump, int64_t offset) {
  FlightDump copy = dump;
  add(std::move(copy), offset);
}

void FlightData::add(FlightDump&& dump, int64_t offset) {
  auto& rows = by_rank[dump.rank];
  if (rows.empty()) {  // the usual case: this rank's first dump, nothing to merge with
    rows = std::move(dump.entries);
    for (CollectiveRow& r : rows)
      for (int64_t* t : {&r.t_created_ns, &r.t_started_ns, &r.t_completed_ns})
        if (*t > 0) *t += offset;
  } else {
    // A record already held (same group and record id) is replaced by a later state of it:
    // found through an index, so adding n records costs n, not n squared.
    std::map<std::tuple<int64_t, int64_t, std::string>, size_t> held;
    for (size_t k = 0; k < rows.size(); ++k)
      held.emplace(std::make_tuple(rows[k].pg_id, rows[k].record_id, rows[k].pg_name), k);
    rows.reserve(rows.size() + dump.entries.size());
    for (CollectiveRow& r : dump.entries) {
      for (int64_t* t : {&r.t_created_ns, &r.t_started_ns, &r.t_completed_ns})
        if (*t > 0) *t += offset;
      const auto [it, added] = held.emplace(std::make_tuple(r.pg_id, r.record_id, r.pg_name), rows.size());
      if (added) {
        rows.push_back(std::move(r));
      } else if (CollectiveRow& same = rows[it->second]; r.state_order() >= same.state_order()) {
        r.source = same.source;  // how it arrived first
        same = std::move(r);
      }
    }
  }
  for (const GroupRow& g : dump.groups) {
    const bool known = std::any_of(groups.begin(), groups.end(),
                                   [&](const GroupRow& x) { return x.rank == g.rank && x.name == g.name; });
    if (!known) groups.push_back(g);
  }
  dumps.push_back({dump.rank, dump.dump_time_ns > 0 ? dump.dump_time_ns + offset : 0, dump.reason, dump.trigger,
                   dump.path, dump.stall_ns, dump.stall_end_ns > 0 ? dump.stall_end_ns + offset : 0});
  world_size = std::max(world_size, dump.rank + 1);
  for (const GroupRow& g : dump.groups)
    for (int r : g.ranks)
      world_size = std::max(world_size, r + 1);
}

std::vector<int> FlightData::ranks_without_records() const {
  std::vector<bool> held(static_cast<size_t>(std::max(world_size, 0)), false);
  for (const auto& [rank, rows] : by_rank)
    if (rank >= 0 && rank < world_size) held[static_cast<size_t>(rank)] = true;
  for (const FlightDumpRow& d : dumps)
    if (d.rank >= 0 && d.rank < world_size) held[static_cast<size_t>(d.rank)] = true;
  std::vector<int> out;
  for (int r = 0; r < world_size; ++r)
    if (!held[static_cast<size_t>(r)]) out.push_back(r);
  return out;
}

std::string rank_ranges_text(const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    if (j - i >= 2) {
      parts.push_back(std::to_string(ranks[i]) + ".." + std::to_string(ranks[j]));
    } else {
      for (size_t k = i; k <= j; ++k)
        parts.push_back(std::to_string(ranks[k]));
    }
    i = j + 1;
  }
  std::string s;
  for (size_t k = 0; k < parts.size(); ++k)
    s += (k == 0 ? "" : k + 1 == parts.size() ? " and " : ", ") + parts[k];
  return s;
}

void FlightData::sort() {
  for (auto& [rank, rows] : by_rank) {
    std::sort(rows.begin(), rows.end(), [](const CollectiveRow& a, const CollectiveRow& b) {
      return std::tie(a.pg_id, a.record_id) < std::tie(b.pg_id, b.record_id);
    });
  }
}

std::vector<std::string> flight_dumps_beside(const std::string& run_file) {
  std::vector<std::string> out;
  namespace fs = std::filesystem;
  const fs::path run(run_file);
  const fs::path folder = run.has_parent_path() ? run.parent_path() : fs::path(".");
  const std::string prefix = run.filename().string() + ".fr_rank_";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0)
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ddpscope::probes
