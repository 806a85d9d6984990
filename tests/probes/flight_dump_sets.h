// Reading the flight-dump tests' answers: the files of a folder in order, the verdict on
// a folder, a group's finding, culprits as text.
#pragma once

#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include "flight_analysis.h"
#include "flight_import.h"
#include "hang_analysis.h"
#include "pickle_reader.h"
#include "run_store_reader.h"
#include "scratch_test.h"
#include "sqlite_db.h"

namespace ddpscope::probes::flight_dump_sets {

namespace fs = std::filesystem;

inline std::vector<std::string> files_in(const std::string& folder) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(folder))
    out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline const GroupFinding* finding_of(const HangReport& h, const std::string& group, bool p2p = false) {
  for (const GroupFinding& g : h.flight.groups)
    if (g.group == group && g.p2p == p2p) return &g;
  return nullptr;
}

inline QString culprits_text(const std::vector<int>& c) {
  QStringList s;
  for (int r : c)
    s << QString::number(r);
  return s.join(',');
}

// The verdict from a folder, as `ddpscope-cli hang FOLDER` draws it.
inline HangReport judge(const std::string& folder) {
  return analyze_hang(read_flight_dumps(flight_dump_inputs({folder})));
}

}  // namespace ddpscope::probes::flight_dump_sets
