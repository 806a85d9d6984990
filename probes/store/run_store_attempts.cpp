// RunStoreWriter's attempts: where each rank's launcher placed it, and each attempt of a
// rank (torchrun's elastic restarts start every rank again, into the same run).
#include <nlohmann/json.hpp>

#include "run_store_reader.h"
#include "run_store_schema.h"
#include "run_store_writer.h"

namespace ddpscope::probes {
namespace {

// A whole number of the record, or -1 when it is absent or not one.
int64_t number_or_none(const nlohmann::json& r, const char* key) {
  const auto it = r.find(key);
  return it != r.end() && it->is_number_integer() && it->get<int64_t>() >= 0 ? it->get<int64_t>() : -1;
}

}  // namespace

int64_t RunStoreWriter::iteration_shift(int rank) const {
  const auto it = rank_shift_.find(rank);
  return it == rank_shift_.end() ? 0 : it->second;
}

// {"type":"placement","launcher":L,"local_rank":N,"node":N,"restart":R,"host":H,"pid":P,
// "t_ns":T}, the first record a rank's session sends. The first rank of a new attempt
// fixes where its iterations start: after every iteration stored so far (the earlier
// attempts' ranks are gone by then: torchrun restarts them all), so no two attempts share
// an iteration number.
void RunStoreWriter::store_placement(int64_t rank, const nlohmann::json& r, int64_t offset) {
  const int64_t attempt = std::max<int64_t>(0, number_or_none(r, "restart"));
  auto shift = attempt_shift_.find(attempt);
  if (shift == attempt_shift_.end()) shift = attempt_shift_.emplace(attempt, attempt == 0 ? 0 : max_iteration_).first;
  rank_shift_[static_cast<int>(rank)] = shift->second;
  ensure_rank(static_cast<int>(rank));
  Statement place = db_.prepare("UPDATE ranks SET local_rank = ?, node = ? WHERE rank = ?");
  place.bind_optional(1, number_or_none(r, "local_rank")).bind_optional(2, number_or_none(r, "node")).bind(3, rank);
  place.step();
  const int64_t t = number_or_none(r, "t_ns");
  Statement s = db_.prepare(
      "INSERT OR REPLACE INTO attempts(rank, attempt, host, pid, launcher, joined_ns, first_iteration) "
      "VALUES(?,?,?,?,?,?,?)");
  s.bind(1, rank).bind(2, attempt).bind(3, r.value("host", std::string())).bind_optional(4, number_or_none(r, "pid"));
  s.bind(5, r.value("launcher", std::string())).bind_optional(6, t < 0 ? t : t + offset).bind(7, shift->second + 1);
  s.step();
}

// {"type":"rank_end","restart":R,"failed":F,"t_ns":T}: the attempt's end, as its session
// saw it at exit. An attempt with no placement (an older package) gets its row here.
void RunStoreWriter::store_rank_end(int64_t rank, const nlohmann::json& r, int64_t offset) {
  const int64_t attempt = std::max<int64_t>(0, number_or_none(r, "restart"));
  const int64_t t = number_or_none(r, "t_ns");
  Statement s = db_.prepare(
      "INSERT INTO attempts(rank, attempt, ended_ns, outcome) VALUES(?,?,?,?) "
      "ON CONFLICT(rank, attempt) DO UPDATE SET ended_ns = excluded.ended_ns, outcome = excluded.outcome");
  s.bind(1, rank).bind(2, attempt).bind_optional(3, t < 0 ? t : t + offset);
  s.bind(4, std::string(r.value("failed", false) ? "failed" : "ended"));
  s.step();
}

std::vector<AttemptRow> RunStoreReader::attempts() {
  std::vector<AttemptRow> out;
  if (schema_version(db_) < 11) return out;
  Statement s = db_.prepare(
      "SELECT rank, attempt, host, launcher, pid, joined_ns, ended_ns, outcome, first_iteration FROM attempts "
      "ORDER BY rank, attempt");
  while (s.step()) {
    AttemptRow a;
    a.rank = static_cast<int>(s.column_int64(0));
    a.attempt = static_cast<int>(s.column_int64(1));
    a.host = s.column_text(2);
    a.launcher = s.column_text(3);
    a.pid = s.column_optional(4);
    a.joined_ns = s.column_optional(5);
    a.ended_ns = s.column_optional(6);
    a.outcome = s.column_text(7);
    a.first_iteration = s.column_int64(8);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace ddpscope::probes
