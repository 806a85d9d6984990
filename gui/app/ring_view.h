// RingView: the ring lesson's picture (ring_lesson.h). A row per rank, a column per block
// of the tensor: each cell says whose values that rank's copy of the block sums ("0+1",
// "all 4"), darker as it sums more ranks. The step just taken is drawn as an arrow from
// the block a rank sent to the rank after it in the ring. In predict mode a click on a
// cell answers "which block does this rank send next?".
#pragma once

#include <QWidget>

#include "lesson.h"

namespace ddpscope::gui {

class RingView : public QWidget {
  Q_OBJECT

 public:
  explicit RingView(QWidget* parent = nullptr);
  // The state to draw; `last`: the step just taken (nullptr: none).
  void setState(const LessonState& state, int ranks, const LessonStep* last);
  // The cell's rectangle (for tests and clicks); empty when out of range.
  QRect cellRect(int rank, int block) const;
  QSize sizeHint() const override { return {360, 260}; }
  QSize minimumSizeHint() const override { return {200, 120}; }

 signals:
  void cellClicked(int rank, int block);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* event) override;

 private:
  LessonState m_state;
  int m_ranks = 0;
  bool m_hasLast = false;
  LessonStep m_last;
};

}  // namespace ddpscope::gui
