// LessonGraphStage: a lesson's graph as the graph-drawing views (autograd, DDP buckets)
// show it: every node a step, the state's marks on it, and Predict mode's question "which
// node runs next?" judged from the state.
#pragma once

#include "graph_view.h"
#include "lesson_view.h"

namespace ddpscope::gui {

// The state's counts, done, running and active nodes; `last` (the step just taken) lights
// the node it was about, unless it ran (running says so already).
std::vector<GraphView::NodeMark> lessonMarks(const LessonState& state, const LessonStep* last);

class LessonGraphStage : public GraphView {
  Q_OBJECT

 public:
  explicit LessonGraphStage(QWidget* parent = nullptr);
  void setLesson(const Lesson& lesson);
  void showState(const LessonState& state, size_t applied, bool asking);
  static QString question();

 signals:
  void answered(const LessonAnswer& answer);

 private:
  void judge(int node);

  const Lesson* m_lesson = &noLesson();
  LessonState m_state;
  size_t m_applied = 0;
  bool m_asking = false;
};

}  // namespace ddpscope::gui
