// The lines ddpscope-worker writes for its launcher: "@ddpscope " followed by one JSON
// object. Rank 0 reports start, progress and done on stdout; any rank reports its error
// on stderr. Everything else a rank prints passes through to the user unchanged.
#pragma once

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ddpscope::apps {

constexpr const char* kWorkerLinePrefix = "@ddpscope ";

inline void emit_worker_event(std::FILE* out, const nlohmann::json& event) {
  std::fprintf(out, "%s%s\n", kWorkerLinePrefix, event.dump().c_str());
  std::fflush(out);
}

// A rank's end, before MPI's shutdown (which has no timeout): how many events its probes
// shipped and could not. The launcher's end watchdog starts at the first one
// (job_watchdogs.h), so a rank stopped or stuck while the others end is named.
inline void emit_rank_end(int rank, uint64_t shipped, uint64_t dropped) {
  emit_worker_event(stderr, {{"event", "probes"}, {"rank", rank}, {"shipped", shipped}, {"dropped", dropped}});
}

// The event in `line`, or nothing when the line is ordinary output.
inline std::optional<nlohmann::json> parse_worker_event(const std::string& line) {
  if (line.rfind(kWorkerLinePrefix, 0) != 0) return std::nullopt;
  try {
    return nlohmann::json::parse(line.substr(std::char_traits<char>::length(kWorkerLinePrefix)));
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace ddpscope::apps
