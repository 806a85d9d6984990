// The app on the Ranks tab, for the ranks tests: a run opened and shown there.
#pragma once

#include <QtTest/QtTest>

#include <QComboBox>
#include <QProcess>
#include <cmath>
#include "known_iterations_run.h"
#include "main_window.h"
#include "timeline_page.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "rank_overview.h"
#include "rank_overview_view.h"
#include "ranks_page.h"
#include "scratch_test.h"
#include "timeline_view.h"

namespace ddpscope::gui::ranks_fixture {

using namespace ddpscope;
using namespace ddpscope::gui;

// The window at a laptop's size with `file` open on its Ranks tab; null when it did not open.
inline RanksPage* showRanks(MainWindow& window, const std::string& file) {
  window.resize(1280, 800);
  window.show();
  if (!window.openRun(QString::fromStdString(file))) return nullptr;
  window.showTab(QStringLiteral("ranks"));
  QApplication::processEvents();
  return window.part<RanksPage>();
}

// What the tests of this fixture share.
class RanksTest : public ScratchTest {
 protected:
};

}  // namespace ddpscope::gui::ranks_fixture
