#include "rank_lines.h"

#include <cctype>

namespace ddpscope::apps {

RankLines::RankLines(std::string stream, Sink sink) : tag_end_("]<" + stream + ">:"), sink_(std::move(sink)) {}

// A tag is "[JOB,RANK]<stream>:" with JOB and RANK decimal numbers.
size_t RankLines::find_tag(const std::string& text, size_t from, int& rank, size_t& length) const {
  for (size_t at = text.find('[', from); at != std::string::npos; at = text.find('[', at + 1)) {
    size_t i = at + 1;
    const size_t job_start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
      ++i;
    if (i == job_start || i >= text.size() || text[i] != ',') continue;
    const size_t rank_start = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - rank_start < 9)
      ++i;
    if (i == rank_start || text.compare(i, tag_end_.size(), tag_end_) != 0) continue;
    rank = std::stoi(text.substr(rank_start, i - rank_start));
    length = i + tag_end_.size() - at;
    return at;
  }
  return std::string::npos;
}

void RankLines::line(const std::string& merged) {
  int rank = -1;
  size_t length = 0;
  if (find_tag(merged, 0, rank, length) != 0) {  // mpirun's own words
    sink_(merged);
    return;
  }
  // Pieces: each runs from its tag to the next tag or the end of the line. Only the last
  // piece ends with the newline; the others are a rank's chunk cut short.
  size_t start = length;
  for (;;) {
    int next_rank = -1;
    size_t next_length = 0;
    const size_t next = find_tag(merged, start, next_rank, next_length);
    std::string& pending = pending_[rank];
    pending.append(merged, start, next == std::string::npos ? std::string::npos : next - start);
    if (next == std::string::npos) {
      std::string whole = std::move(pending);
      pending_.erase(rank);
      sink_(whole);
      return;
    }
    rank = next_rank;
    start = next + next_length;
  }
}

void RankLines::flush() {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [rank, text] : pending)
    if (!text.empty()) sink_(text);
}

}  // namespace ddpscope::apps
