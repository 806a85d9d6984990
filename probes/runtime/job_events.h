// The events a job's processes say to whoever follows them: a line "@ddpscope " and one JSON
// object with its "event" and fields, among the processes' other output. One definition for
// every writer and reader:
//   the worker's rank 0 (start, progress, done) and any rank (error, rank end) -> the launcher;
//   the collector (collector) -> the launcher;
//   the launcher, `train --progress json` (start, progress, done, failed) and `collect
//   --progress json` (collect, ranks) -> the desktop app's job controller;
//   the PyTorch probe (probes/python/ddpscope/_report.py) writes start, progress, done and
//   error in the same shape.
// Numbers that may not be finite (a loss) travel as json_number.h writes them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "failed_collective.h"
#include "json_number.h"

namespace ddpscope::probes::job_events {

inline constexpr std::string_view kPrefix = "@ddpscope ";

struct Start {  // the group is up: what trains, on how many ranks
  int world_size = 0;
  std::string backend, describe;
};
struct Progress {  // an iteration done
  int64_t iter = 0;
  int64_t total = -1;          // the iterations asked for (-1: not known, a script's)
  std::optional<double> loss;  // not said when the job logs none
  double samples_per_s = 0;
  int64_t nonfinite_since = -1;  // the first iteration whose loss was not finite
};
struct Done {  // training over
  double seconds = 0;
  int64_t iterations = -1;  // -1: not said
  int64_t stopped_at = -1;  // --join-throw ended every rank early there
  double samples_per_s = 0;
  std::optional<double> loss;
};
struct Error {  // a rank failed (its stderr): the first one is the job's failure
  int rank = -1;
  std::string message;
  FailedCollective collective;  // the collective it ended, when it was one's (op, seq, timed_out)
};
struct RankEnd {  // a rank is past training, before MPI's shutdown: its probes' counts
  int rank = -1;
  uint64_t shipped = 0, dropped = 0;
};
struct Failed {   // the launcher's verdict on a failed job
  int rank = -1;  // -1: no rank named
  std::string message;
  int exit_code = 0;
};
struct Collector {  // the collector listens: where ranks send batches and clock samples
  std::string batch, clock;
};
struct Collect {  // `collect` is ready: the run file and the environment a job needs
  std::string run;
  std::vector<std::string> exports;
  std::string prefix;
};
struct Ranks {  // `collect`: ranks that joined and ended so far
  int64_t joined = 0, ended = 0;
};

using Event = std::variant<Start, Progress, Done, Error, RankEnd, Failed, Collector, Collect, Ranks>;

// Each event's name on the line, by its index in Event.
inline constexpr const char* kNames[] = {"start",  "progress",  "done",    "error", "probes",
                                         "failed", "collector", "collect", "ranks"};
static_assert(std::size(kNames) == std::variant_size_v<Event>);

namespace detail {

inline nlohmann::json fields(const Start& e) {
  return {{"world_size", e.world_size}, {"backend", e.backend}, {"describe", e.describe}};
}
inline nlohmann::json fields(const Progress& e) {
  nlohmann::json j = {{"iter", e.iter}, {"samples_per_s", e.samples_per_s}};
  if (e.total >= 0) j["total"] = e.total;
  if (e.loss) j["loss"] = json_number(*e.loss);
  if (e.nonfinite_since >= 0) j["nonfinite_since"] = e.nonfinite_since;
  return j;
}
inline nlohmann::json fields(const Done& e) {
  nlohmann::json j = {{"seconds", e.seconds}, {"samples_per_s", e.samples_per_s}};
  if (e.iterations >= 0) j["iterations"] = e.iterations;
  if (e.stopped_at >= 0) j["stopped_at"] = e.stopped_at;
  if (e.loss) j["loss"] = json_number(*e.loss);
  return j;
}
inline nlohmann::json fields(const Error& e) {
  nlohmann::json j = {{"rank", e.rank}, {"message", e.message}};
  if (e.collective.known()) {
    j["op"] = e.collective.op;
    j["seq"] = e.collective.seq;
    j["timed_out"] = e.collective.timed_out;
  }
  return j;
}
inline nlohmann::json fields(const RankEnd& e) {
  return {{"rank", e.rank}, {"shipped", e.shipped}, {"dropped", e.dropped}};
}
inline nlohmann::json fields(const Failed& e) {
  return {{"rank", e.rank}, {"message", e.message}, {"exit_code", e.exit_code}};
}
inline nlohmann::json fields(const Collector& e) { return {{"batch", e.batch}, {"clock", e.clock}}; }
inline nlohmann::json fields(const Collect& e) {
  return {{"run", e.run}, {"exports", e.exports}, {"prefix", e.prefix}};
}
inline nlohmann::json fields(const Ranks& e) { return {{"joined", e.joined}, {"ended", e.ended}}; }

inline std::optional<double> loss_of(const nlohmann::json& j) {
  const auto it = j.find("loss");
  if (it == j.end()) return std::nullopt;
  return json_to_double(*it);
}

// The event named `name` from its fields; nothing for a name this header does not know.
inline std::optional<Event> event_named(std::string_view name, const nlohmann::json& j) {
  if (name == "start")
    return Start{json_value(j, "world_size", 0), json_value<std::string>(j, "backend", ""),
                 json_value<std::string>(j, "describe", "")};
  if (name == "progress")
    return Progress{json_value<int64_t>(j, "iter", 0), json_value<int64_t>(j, "total", -1), loss_of(j),
                    json_field(j, "samples_per_s"), json_value<int64_t>(j, "nonfinite_since", -1)};
  if (name == "done")
    return Done{json_field(j, "seconds"), json_value<int64_t>(j, "iterations", -1),
                json_value<int64_t>(j, "stopped_at", -1), json_field(j, "samples_per_s"), loss_of(j)};
  if (name == "error")
    return Error{
        json_value(j, "rank", -1),
        json_value<std::string>(j, "message", ""),
        {json_value<std::string>(j, "op", ""), json_value<int64_t>(j, "seq", -1), json_value(j, "timed_out", false)}};
  if (name == "probes")
    return RankEnd{json_value(j, "rank", -1), json_value<uint64_t>(j, "shipped", 0),
                   json_value<uint64_t>(j, "dropped", 0)};
  if (name == "failed")
    return Failed{json_value(j, "rank", -1), json_value<std::string>(j, "message", ""), json_value(j, "exit_code", 0)};
  if (name == "collector")
    return Collector{json_value<std::string>(j, "batch", ""), json_value<std::string>(j, "clock", "")};
  if (name == "collect")
    return Collect{json_value<std::string>(j, "run", ""), json_value<std::vector<std::string>>(j, "exports", {}),
                   json_value<std::string>(j, "prefix", "")};
  if (name == "ranks") return Ranks{json_value<int64_t>(j, "joined", 0), json_value<int64_t>(j, "ended", 0)};
  return std::nullopt;
}

}  // namespace detail

inline const char* name_of(const Event& event) { return kNames[event.index()]; }

// "@ddpscope {...}" without the newline.
inline std::string to_line(const Event& event) {
  nlohmann::json j = std::visit([](const auto& e) { return detail::fields(e); }, event);
  j["event"] = name_of(event);
  return std::string(kPrefix) + j.dump();
}

// The line, flushed at once: a launcher or the app acts on it while the job runs.
inline void write_event(std::FILE* out, const Event& event) {
  std::fprintf(out, "%s\n", to_line(event).c_str());
  std::fflush(out);
}

// The event on `line`; nothing when the line is the job's own output, is not JSON, or names an
// event this header does not know.
inline std::optional<Event> parse_line(std::string_view line) {
  if (line.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(line.substr(kPrefix.size()), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("event");
  if (name == j.end() || !name->is_string()) return std::nullopt;
  return detail::event_named(name->get<std::string>(), j);
}

}  // namespace ddpscope::probes::job_events
