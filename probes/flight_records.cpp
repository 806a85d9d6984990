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

// PyTorch writes a group's ranks as the text "[0, 1]"; ddpscope as a list.
std::vector<int> ranks_of(const json& v) {
  std::vector<int> out;
  if (v.is_array()) {
    for (const auto& r : v) {
      const int64_t rank = to_int(r);
      if (rank < 0 || rank > 10'000'000) throw json::type_error::create(302, "a rank in \"ranks\" is out of range", &v);
      out.push_back(static_cast<int>(rank));
    }
    return out;
  }
  if (!v.is_string()) return out;
  const std::string s = v.get<std::string>();
  for (size_t i = 0; i < s.size();) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      size_t end = i;
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])))
        ++end;
      if (end - i > 7) throw json::type_error::create(302, "a rank in \"ranks\" is out of range", &v);
      out.push_back(std::stoi(s.substr(i, end - i)));
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

// The digits at the end of a file's name, before a .json suffix: -1 when none.
int rank_from_name(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  size_t begin = name.size();
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1])))
    --begin;
  if (begin == name.size() || name.size() - begin > 7) return -1;
  return std::stoi(name.substr(begin));
}

[[noreturn]] void bad_dump(const std::string& path, const std::string& why) {
  throw RunStoreError(detail::concat("'", path, "' is not a flight-recorder dump ddpscope can read: ", why), __FILE__,
                      __LINE__);
}

}  // namespace

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
      r.frames.push_back({text_or(f, "name"), text_or(f, "filename"), int_or(f, "line", 0)});
    }
  }
  return r;
}

bool looks_like_flight_dump(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[4096] = {};
  in.read(head, sizeof head - 1);
  const std::string text(head, static_cast<size_t>(in.gcount()));
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return false;
  return text.find("\"entries\"") != std::string::npos &&
         (text.find("\"pg_config\"") != std::string::npos || text.find("\"version\"") != std::string::npos);
}

FlightDump read_flight_dump(const std::string& path, int fallback_rank) {
  std::ifstream in(path, std::ios::binary);
  if (!in) bad_dump(path, "cannot open it");
  const int first = in.peek();
  if (first == 0x80) {
    bad_dump(path,
             "it is a Python pickle (the form PyTorch writes to TORCH_FR_DUMP_TEMP_FILE). Dump JSON instead "
             "(torch._C._distributed_c10d._dump_nccl_trace_json() returns it), or convert the file: "
             "python -c \"import pickle,json,sys; json.dump(pickle.load(open(sys.argv[1],'rb')), "
             "open(sys.argv[1]+'.json','w'), default=str)\" FILE");
  }
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    bad_dump(path, detail::concat("not JSON (", e.what(), ")"));
  }
  if (!doc.is_object() || !doc.contains("entries") || !doc["entries"].is_array())
    bad_dump(path, "no \"entries\" list (PyTorch's dumps have \"version\", \"pg_config\" and \"entries\")");
  FlightDump d;
  d.path = path;
  // Text fields of another type are taken as absent (version "2.4" is sometimes a number).
  d.version = text_or(doc, "version");
  d.producer = text_or(doc, "producer");
  d.reason = text_or(doc, "dump_reason");
  d.trigger = text_or(doc, "dump_trigger");
  try {
    d.dump_time_ns = int_or(doc, "dump_time_ns", 0);
    d.stall_ns = std::clamp<int64_t>(int_or(doc, "stall_ns", 0), 0, int64_t{1} << 61);
    d.stall_end_ns = std::clamp<int64_t>(int_or(doc, "stall_end_ns", 0), 0, int64_t{1} << 61);
    d.dump_time_ns = std::clamp<int64_t>(d.dump_time_ns, 0, int64_t{1} << 61);
    d.rank = static_cast<int>(int_or(doc, "rank", -1));
  } catch (const json::exception& e) {
    bad_dump(path, e.what());
  }
  if (d.rank > 10'000'000) bad_dump(path, detail::concat("its rank ", d.rank, " is out of range"));
  if (d.rank < 0) d.rank = rank_from_name(path);
  if (d.rank < 0) d.rank = fallback_rank;
  if (d.rank < 0)
    bad_dump(path, "its rank is not in it and its name does not end with one (name it like nccl_trace_rank_0)");
  if (const auto cfg = doc.find("pg_config"); cfg != doc.end() && cfg->is_object()) {
    int64_t index = 0;
    for (const auto& [key, g] : cfg->items()) {
      try {
        GroupRow row;
        row.rank = d.rank;
        row.pg_id = index++;
        row.name = g.is_object() ? text_or(g, "name", key) : key;
        row.desc = g.is_object() ? text_or(g, "desc") : std::string();
        if (g.is_object() && g.contains("ranks")) row.ranks = ranks_of(g["ranks"]);
        d.groups.push_back(std::move(row));
      } catch (const json::exception& e) {
        bad_dump(path, detail::concat("pg_config[\"", key, "\"]: ", e.what()));
      }
    }
  }
  size_t index = 0;
  for (const auto& e : doc["entries"]) {
    try {
      if (!e.is_object()) throw json::type_error::create(302, "an entry must be an object", &e);
      d.entries.push_back(collective_from_entry(e, d.rank));
    } catch (const std::exception& x) {
      bad_dump(path, detail::concat("entry ", index, ": ", x.what()));
    }
    ++index;
  }
  return d;
}

void FlightData::add(const FlightDump& dump, int64_t offset) {
  auto& rows = by_rank[dump.rank];
  for (CollectiveRow r : dump.entries) {
    for (int64_t* t : {&r.t_created_ns, &r.t_started_ns, &r.t_completed_ns})
      if (*t > 0) *t += offset;
    auto same = std::find_if(rows.begin(), rows.end(), [&](const CollectiveRow& x) {
      return x.pg_id == r.pg_id && x.record_id == r.record_id && x.pg_name == r.pg_name;
    });
    if (same == rows.end()) {
      rows.push_back(std::move(r));
    } else if (r.state_order() >= same->state_order()) {
      r.source = same->source;  // how it arrived first
      *same = std::move(r);
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
