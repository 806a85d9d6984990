// Flight-recorder dumps as PyTorch's writer (c10d's FlightRecorder) writes them, read by
// one SAX builder from either form:
//  - JSON (dump_json): nlohmann's dump() of a std::map, so keys sorted and no spaces:
//    {"comm_lib_version","entries":[...],"nccl_comm_state","pg_config","pg_status","version"};
//    "entries" is absent when the ring is empty; no "frames"; a time not yet seen is 0;
//    pg_status values are text ("30");
//  - the pickle (dump, what TORCH_FR_DUMP_TEMP_FILE receives on a timeout): torch's own
//    pickler, protocol 2, strings memoized, keys in insertion order with "entries" last,
//    "frames" per entry, a time not yet seen is None, pg_status values are integers.
// Both: "version" is "major.minor" ("2.10"), pg_config is keyed by group name with
// "ranks" as text ("[0, 1]"), pg_status is keyed by pg_id (numbered per process, so it
// differs between ranks for one group). gloo's recorder (PyTorch 2.8 on) leaves every
// entry "scheduled" with times 0 and writes one nameless group with no ranks.
#include <rapidjson/error/en.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string_view>

#include "ddpscope/error.h"
#include "flight_dump_format.h"
#include "flight_dump_builder.h"
#include "flight_records.h"
#include "gz_stream.h"
#include "pickle_reader.h"
#include "sqlite_db.h"

namespace ddpscope::probes {
namespace {

namespace fs = std::filesystem;
namespace fk = flight_keys;
using namespace dump_sax;

std::string lower(std::string s) {
  for (char& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The digits at the end of a file's name, before .json / .pkl / .pickle / .gz: -1 when none.
int rank_from_name(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* suffix : {".gz", ".json", ".pkl", ".pickle"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && lower(name.substr(name.size() - s.size())) == s) name.resize(name.size() - s.size());
  }
  size_t begin = name.size();
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1])))
    --begin;
  if (begin == name.size() || name.size() - begin > 7) return -1;
  return std::stoi(name.substr(begin));
}

// What a file that is neither JSON nor a pickle is, from its first bytes (only to say
// why it is not a dump).
std::string what_else(GzStream& in) {
  char head[16] = {};
  size_t n = 0;
  while (n < sizeof head && !in.at_end())
    head[n++] = in.Take();
  if (n >= 15 && std::string_view(head, 15) == "SQLite format 3")
    return "it is a SQLite database (a ddpscope run file? open it, or give it to `hang` alone)";
  return "it is neither JSON nor a pickle";
}

enum class Form { Json, Pickle, Other };

Form form_of(const GzStream& in) {
  const auto c = static_cast<unsigned char>(in.Peek());
  if (c == 0x80) return Form::Pickle;
  if (c == '{' || c == '[' || c == ' ' || c == '\n' || c == '\r' || c == '\t') return Form::Json;
  return Form::Other;
}

void check_version(FlightDump& d, const std::string& path) {
  if (d.version.empty()) {
    if (d.producer == fk::kProducerName) return;
    bad_dump(path, "it has no \"version\" (PyTorch writes one in every dump, such as \"2.10\")");
  }
  const std::string& v = d.version;
  const size_t dot = v.find('.');
  int major = -1, minor = -1;
  const auto number = [](std::string_view t, int& out) {
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return !t.empty() && ec == std::errc() && end == t.data() + t.size() && out >= 0;
  };
  if (dot == std::string::npos || !number(std::string_view(v).substr(0, dot), major) ||
      !number(std::string_view(v).substr(dot + 1), minor))
    bad_dump(path, detail::concat("its version \"", v.substr(0, 40),
                                  "\" is not major.minor (PyTorch writes versions such as \"2.10\")"));
  if (major < 1 || major > 2)
    bad_dump(path, detail::concat("its version ", v,
                                  " is not one ddpscope knows: versions 1.x and 2.x are read "
                                  "(PyTorch's dumps up to 2.10); a newer PyTorch may have changed the format"));
  d.version_major = major;
  d.version_minor = minor;
}

// gloo's recorder never moves an entry past "scheduled": then `retired` says it finished.
void settle_states(FlightDump& d) {
  d.states_tracked = std::any_of(d.entries.begin(), d.entries.end(), [](const CollectiveRow& r) {
    return r.state != "scheduled" || r.t_started_ns > 0 || r.t_completed_ns > 0;
  });
  if (d.states_tracked || d.entries.empty()) return;
  for (CollectiveRow& r : d.entries)
    if (r.retired) r.state = "completed";
}

// How reading a dump's body ended: read (its checks come next), probed (a probe has
// seen enough: the dump is returned as it is), or refused (`why` says why).
enum class BodyRead { Read, Probed, Refused };

BodyRead read_json_body(GzStream& in, DumpBuilder& builder, bool probe, std::string& why) {
  rapidjson::Reader reader;
  JsonAdapter adapter{builder};
  const rapidjson::ParseResult ok =
      reader.Parse<rapidjson::kParseStopWhenDoneFlag | rapidjson::kParseNanAndInfFlag>(in, adapter);
  if (probe && builder.saw_dump_key()) return BodyRead::Probed;
  if (ok) {
    // The parser stops after one document: what follows it must be nothing but space
    // (a dump is one object; a second, or text after it, was read as if it were not there).
    while (!in.at_end() && std::isspace(static_cast<unsigned char>(in.Peek())))
      in.Take();
    if (in.at_end()) return BodyRead::Read;
    why = detail::concat("more than one document: text follows the dump at byte ", in.Tell(),
                         "; a dump is one JSON object");
    return BodyRead::Refused;
  }
  const auto code = ok.Code();
  if (!builder.error().empty())
    why = builder.error();
  else if (!builder.started())
    why = detail::concat("it is not JSON (", rapidjson::GetParseError_En(code), " at byte ", ok.Offset(), ")");
  else if (in.at_end())
    why = detail::concat("it is truncated: the JSON ends at byte ", ok.Offset(), " (", builder.entries(),
                         " entries read); copy the whole file again");
  else
    why = detail::concat("it is damaged at byte ", ok.Offset(), ": ", rapidjson::GetParseError_En(code), " (",
                         builder.entries(), " entries read before it)");
  return BodyRead::Refused;
}

// The root dictionary's "entries" stream through the builder one at a time; the rest
// of the root is replayed once read.
BodyRead read_pickle_body(GzStream& in, DumpBuilder& builder, bool probe, std::string& why) {
  try {
    PickleReader reader(in);
    if (probe) {
      reader.stop_at_first_root_key();
      reader.read();
      if (dump_key(reader.first_root_key())) return BodyRead::Probed;
      why = reader.first_root_key().empty() ? "it is a pickle, but not of a dictionary"
                                            : detail::concat("it is a pickle of a dictionary whose first key is \"",
                                                             reader.first_root_key().substr(0, 40), "\", not a dump's");
      return BodyRead::Refused;
    }
    builder.enter_entries();
    bool entry_failed = false;
    reader.stream_root_list(fk::entries, [&](const PickleValue& item) {
      entry_failed = !replay(item, builder);
      return !entry_failed;
    });
    const PickleValue root = reader.read();
    if (entry_failed) {
      why = builder.error();
      return BodyRead::Refused;
    }
    builder.leave_entries();
    if (root.type != PickleValue::Type::Dict) {
      why = "it is a pickle, but not of a dictionary (a dump is one: version, pg_config, entries)";
      return BodyRead::Refused;
    }
    if (!replay(root, builder)) {
      why = builder.error();
      return BodyRead::Refused;
    }
  } catch (const PickleError& e) {
    why = e.what();
    return BodyRead::Refused;
  }
  return BodyRead::Read;
}

FlightDump read_dump(const std::string& path, int fallback_rank, bool probe, std::string* why_not) {
  FlightDump d;
  d.path = path;
  d.rank = -1;
  std::unique_ptr<GzStream> in;
  try {
    in = std::make_unique<GzStream>(path, "flight-recorder dump");
  } catch (const TraceFileError& e) {
    if (why_not) {
      *why_not = e.what();
      return d;
    }
    throw RunStoreError(e.what(), __FILE__, __LINE__);
  }
  const auto refuse = [&](const std::string& why) -> FlightDump {
    if (why_not) {
      *why_not = why;
      return d;
    }
    bad_dump(path, why);
  };
  if (in->at_end()) return refuse("the file is empty");
  DumpBuilder builder(d, probe, (int64_t{64} << 20) + kExpansion * std::max<int64_t>(in->file_size(), 0));
  const Form form = form_of(*in);
  if (form == Form::Other) return refuse(what_else(*in));
  std::string why;
  if (form == Form::Pickle) d.form = "pickle";
  const BodyRead body =
      form == Form::Json ? read_json_body(*in, builder, probe, why) : read_pickle_body(*in, builder, probe, why);
  if (body == BodyRead::Probed) return d;
  if (body == BodyRead::Refused) return refuse(why);
  if (!builder.saw_dump_key())
    return refuse("it has none of a dump's keys (\"version\", \"pg_config\", \"pg_status\", \"entries\")");
  if (probe) return d;
  check_version(d, path);
  settle_states(d);
  if (d.rank < 0) d.rank = rank_from_name(path);
  if (d.rank < 0) d.rank = fallback_rank;
  if (d.rank < 0)
    bad_dump(path, "its rank is not in it and its name does not end with one (name it like nccl_trace_rank_0)");
  for (CollectiveRow& r : d.entries)
    r.rank = d.rank;
  for (GroupRow& g : d.groups)
    g.rank = d.rank;
  return d;
}

}  // namespace

FlightDump read_flight_dump(const std::string& path, int fallback_rank) {
  return read_dump(path, fallback_rank, false, nullptr);
}

std::string why_not_flight_dump(const std::string& path) {
  std::string why;
  try {
    read_dump(path, 0, true, &why);
  } catch (const Error& e) {
    why = e.what();
  }
  return why;
}

bool looks_like_flight_dump(const std::string& path) { return why_not_flight_dump(path).empty(); }

std::vector<std::string> flight_dump_inputs(const std::vector<std::string>& inputs, std::vector<std::string>* skipped) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw RunStoreError(detail::concat("'", in, "' does not exist"), __FILE__, __LINE__);
    if (!fs::is_directory(st)) {
      out.push_back(in);
      continue;
    }
    std::vector<std::string> files, reasons;
    for (const auto& e : fs::directory_iterator(in, ec)) {
      if (!e.is_regular_file(ec)) continue;
      const std::string p = e.path().string();
      const std::string why = why_not_flight_dump(p);
      if (why.empty()) {
        files.push_back(p);
      } else {
        std::string shown = why;
        if (const size_t cut = shown.find("': "); cut != std::string::npos && shown.rfind("'", 0) == 0)
          shown = shown.substr(cut + 3);
        reasons.push_back(detail::concat(e.path().filename().string(), ": ", shown));
      }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      std::string held = reasons.empty() ? std::string("no files") : reasons.front();
      if (reasons.size() > 1) held += detail::concat(" (and ", reasons.size() - 1, " more files that are not dumps)");
      throw RunStoreError(detail::concat("the folder '", in, "' holds no flight-recorder dump: ", held), __FILE__,
                          __LINE__);
    }
    out.insert(out.end(), files.begin(), files.end());
    if (skipped) skipped->insert(skipped->end(), reasons.begin(), reasons.end());
  }
  return out;
}

std::vector<std::string> dumps_in_folder(const std::string& folder, std::vector<std::string>* skipped) {
  std::vector<std::string> why_not, found;
  try {
    found = flight_dump_inputs({folder}, &why_not);
  } catch (const Error&) {
    return {};
  }
  for (const std::string& why : why_not)
    if (why.find("profiler trace") != std::string::npos) return {};
  if (skipped) skipped->insert(skipped->end(), why_not.begin(), why_not.end());
  return found;
}

}  // namespace ddpscope::probes
