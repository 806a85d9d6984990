// A big synthetic run (60 iterations of many spans a rank) for the tests of what opens it
// in parts: written once per test program, opened in the app on its Timeline tab.
#pragma once

#include <QtTest/QtTest>

#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QTableView>
#include <QSignalSpy>
#include <filesystem>
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "run_data.h"
#include "run_store_writer.h"
#include "scratch_test.h"
#include "synthetic_run.h"
#include "timeline_data.h"
#include "timeline_detail_loader.h"
#include "timeline_page.h"
#include "timeline_view.h"

namespace ddpscope::gui::big_run_fixture {

using namespace ddpscope;
using namespace ddpscope::gui;
using probes::Kind;

inline constexpr int kIterations = 60;

inline bool is_detail(Kind k) { return probes::is_detail_kind(static_cast<uint8_t>(k)); }

inline int64_t count_kind(const TimelineData& d, Kind kind, int64_t from = INT64_MIN, int64_t to = INT64_MAX) {
  int64_t n = 0;
  for (const auto& l : d.lanes) {
    for (const auto* v : {&l.spans, &l.instants}) {
      for (const auto& s : *v)
        n += s.kind == kind && s.end_ns >= from && s.begin_ns <= to;
    }
  }
  return n;
}

// Iteration `it` of the synthetic run: [it * 10 ms + rank * 20 us, + 9.5 ms].
inline int64_t iteration_begin(int it) { return int64_t{it} * 10'000'000; }

// What the tests of this fixture share.
class BigRunTest : public ScratchTest {
 protected:
  std::string m_file;

  // The app at 1280x800 on the Timeline tab, before and after a run opens.
  static std::unique_ptr<MainWindow> app() {
    auto window = std::make_unique<MainWindow>(QString());
    window->resize(1280, 800);
    window->show();
    window->showTab(QStringLiteral("timeline"));
    return window;
  }

  std::unique_ptr<MainWindow> openInApp() {
    auto window = app();
    if (!window->openRun(QString::fromStdString(m_file))) return nullptr;
    return window;
  }
};

}  // namespace ddpscope::gui::big_run_fixture
