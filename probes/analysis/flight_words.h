// Collectives in words, for the flight analysis's verdicts: ranks ("Ranks 0, 1 and 3"),
// tensors ("f32[1024]", "3 x f32[8]"), where a call came from ("in loss allreduce of
// iteration 3", "in forward at train.py:42"), and what in a record no writer writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "flight_records.h"

namespace ddpscope::probes::flight_words {

std::string list_text(const std::vector<int>& ranks);    // "0, 1 and 3"
std::string ranks_text(const std::vector<int>& ranks);   // "Rank 0" / "Ranks 0 and 1"
std::string lower_ranks(const std::vector<int>& ranks);  // "rank 0" / "ranks 0 and 1"
std::string shape_text(const std::vector<int64_t>& dims);
std::string tensors_text(const std::vector<std::vector<int64_t>>& sizes, const std::vector<std::string>& dtypes);
std::string origin_text(const CollectiveRow& r);
std::string from_text(const CollectiveRow& r);  // " in " + origin_text, or ""
bool known_dtype(const std::string& d);
bool known_op(const std::string& op);
std::string unknown_text(const CollectiveRow& r);

}  // namespace ddpscope::probes::flight_words
