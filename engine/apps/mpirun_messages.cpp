#include "mpirun_messages.h"

#include <regex>

#include "ddpscope/error.h"

namespace ddpscope::apps {

std::pair<int, std::string> mpi_fatal_error(const std::deque<std::string>& lines) {
  static const std::regex call_re(R"(\*\*\* An error occurred in (MPI_\w+))");
  static const std::regex rank_re(R"(\*\*\* reported by process \[\d+,(\d+)\])");
  static const std::regex class_re(R"(\*\*\* (MPI_ERR_\w+: .*))");
  std::string call, error_class;
  int rank = -1;
  for (const auto& line : lines) {
    std::smatch m;
    if (call.empty() && std::regex_search(line, m, call_re)) call = m[1];
    if (rank < 0 && std::regex_search(line, m, rank_re)) rank = std::stoi(m[1]);
    if (error_class.empty() && std::regex_search(line, m, class_re)) error_class = m[1];
  }
  if (call.empty() || rank < 0) return {-1, {}};
  std::string text =
      detail::concat(call, " failed on rank ", rank, ": ", error_class.empty() ? "an MPI error" : error_class);
  if (error_class.rfind("MPI_ERR_TRUNCATE", 0) == 0) {
    text +=
        "; the ranks called collectives of different sizes or in a different order. Rerun with "
        "DDPSCOPE_DEBUG=detail: each collective is then checked across ranks and a mismatch names both sides";
  }
  return {rank, text};
}

std::pair<int, std::string> rank_death(const std::deque<std::string>& lines) {
  static const std::regex dead_re("process rank ([0-9]+)");
  for (const auto& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, dead_re)) return {std::stoi(m[1]), line};
  }
  return {-1, {}};
}

}  // namespace ddpscope::apps
