// ComparePage: the run shown (A) beside another (B), as `ddpscope-cli compare` puts
// them (probes/analysis/run_compare.h): a headline, the iteration's parts as two stacked bars on
// one scale, the ops that appeared, disappeared, got slower or faster, and the two
// timelines one above the other on one time scale, each starting at its first compared
// iteration; zooming or panning either moves both.
#pragma once

#include <QWidget>
#include <memory>

#include "run_compare.h"

class QLabel;
class QStandardItemModel;
class QTableView;

namespace ddpscope::gui {

struct RunData;
class BreakdownBars;
class TimelineView;

class ComparePage : public QWidget {
  Q_OBJECT

 public:
  explicit ComparePage(QWidget* parent = nullptr);
  void showComparison(std::shared_ptr<const RunData> a, std::shared_ptr<const RunData> b,
                      const probes::RunComparison& comparison);
  const probes::RunComparison& comparison() const { return m_comparison; }
  TimelineView* timelineA() const { return m_timelineA; }
  TimelineView* timelineB() const { return m_timelineB; }
  QTableView* opsTable() const { return m_opsTable; }
  QString headline() const;
  // What the settings note above the headline says ("" when the settings agree).
  QString settingsNote() const;

 private:
  void fillOps();
  // Shows in `to` the window `from` shows, moved from one run's aligned start to the other's.
  void follow(TimelineView* from, TimelineView* to, int64_t fromOrigin, int64_t toOrigin);

  std::shared_ptr<const RunData> m_a, m_b;
  probes::RunComparison m_comparison;
  QLabel* m_headline = nullptr;
  QLabel* m_settings = nullptr;
  QLabel* m_labelA = nullptr;
  QLabel* m_labelB = nullptr;
  BreakdownBars* m_bars = nullptr;
  QStandardItemModel* m_ops = nullptr;
  QTableView* m_opsTable = nullptr;
  TimelineView* m_timelineA = nullptr;
  TimelineView* m_timelineB = nullptr;
  bool m_following = false;  // a window being passed on: the other view's answer is not passed back
};

}  // namespace ddpscope::gui
