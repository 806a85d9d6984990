#include "timeline_search.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>

namespace ddpscope::gui {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  const auto b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

}  // namespace

SearchResults searchTimeline(const TimelineData& data, const std::string& query) {
  SearchResults out;
  const std::string q = lower(trim(query));
  if (q.empty()) return out;
  int bucket = -1;
  std::smatch m;
  static const std::regex bucket_re(R"(bucket\s*#?\s*(\d{1,9}))");
  if (std::regex_match(q, m, bucket_re)) bucket = std::stoi(m[1].str());
  std::vector<char> name_hit(data.names.size(), 0);
  for (size_t i = 0; i < data.names.size(); ++i)
    name_hit[i] = lower(data.names[i]).find(q) != std::string::npos;
  std::set<std::pair<int, int>> param_hit;  // (rank, index)
  for (const auto& [key, name] : data.param_names) {
    if (lower(name).find(q) != std::string::npos) param_hit.insert(key);
  }
  auto hit = [&](const TimelineSpan& s, int rank) {
    if (bucket >= 0) return s.bucket == bucket;
    if (s.name >= 0 && static_cast<size_t>(s.name) < name_hit.size() && name_hit[static_cast<size_t>(s.name)])
      return true;
    return s.param >= 0 && !param_hit.empty() && param_hit.count({rank, s.param}) > 0;
  };
  struct Found {
    int64_t t;
    SpanRef ref;
  };
  std::vector<Found> found;
  for (size_t l = 0; l < data.lanes.size() && !out.truncated; ++l) {
    const TimelineLane& lane = data.lanes[l];
    for (auto [v, in] : {std::pair{&lane.spans, SpanRef::In::Spans}, std::pair{&lane.instants, SpanRef::In::Instants},
                         std::pair{&lane.open, SpanRef::In::Open}}) {
      for (size_t k = 0; k < v->size(); ++k) {
        if (!hit((*v)[k], lane.rank)) continue;
        if (found.size() == SearchResults::kMaxMatches) {
          out.truncated = true;
          break;
        }
        found.push_back({(*v)[k].begin_ns, {static_cast<int>(l), static_cast<int64_t>(k), in}});
      }
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.t < b.t; });
  out.matches.reserve(found.size());
  for (const Found& f : found)
    out.matches.push_back(f.ref);
  return out;
}

}  // namespace ddpscope::gui
