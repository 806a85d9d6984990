#include "lesson_graph_stage.h"

namespace ddpscope::gui {

std::vector<GraphView::NodeMark> lessonMarks(const LessonState& s, const LessonStep* last) {
  std::vector<GraphView::NodeMark> marks(s.counters.size());
  for (size_t i = 0; i < marks.size(); ++i) {
    marks[i].counter = s.counters[i];
    marks[i].executed = s.executed[i];
    marks[i].active = s.active[i];
    marks[i].running = static_cast<int>(i) == s.running;
  }
  if (last && last->node >= 0 && last->kind != StepKind::NodeRuns && static_cast<size_t>(last->node) < marks.size())
    marks[static_cast<size_t>(last->node)].highlight = true;
  return marks;
}

LessonGraphStage::LessonGraphStage(QWidget* parent) : GraphView(parent) {
  setFocusPolicy(Qt::NoFocus);  // the arrows step the lesson, not scroll the graph
  connect(this, &GraphView::nodeIndexClicked, this, &LessonGraphStage::judge);
}

void LessonGraphStage::setLesson(const Lesson& lesson) {
  m_lesson = &lesson;
  m_asking = false;
  setGraph(lesson.graph, 1 << 30);  // never collapsed: every node is a step
}

void LessonGraphStage::showState(const LessonState& state, size_t applied, bool asking) {
  m_state = state;
  m_applied = applied;
  m_asking = asking;
  setMarks(lessonMarks(state, applied > 0 ? &m_lesson->steps[applied - 1] : nullptr));
}

QString LessonGraphStage::question() { return tr("Which node runs next? Click it in the graph."); }

void LessonGraphStage::judge(int node) {
  if (!m_asking || m_applied >= m_lesson->steps.size()) return;
  const LessonStep& next = m_lesson->steps[m_applied];
  const GraphNode& clicked = m_lesson->graph.nodes[static_cast<size_t>(node)];
  const QString op = QString::fromStdString(clicked.op);
  // A local graph's nodes have no worker (-1): named by their op alone.
  const QString named = clicked.rank >= 0 ? tr("%1 on worker %2").arg(op).arg(clicked.rank) : op;
  LessonAnswer answer;
  answer.choice = named;
  answer.right = node == next.node;
  if (answer.right) {
    answer.verdict = tr("Right: %1 runs next.").arg(op);
  } else {
    const auto n = static_cast<size_t>(node);
    const QString why = m_state.executed[n] ? tr("it has already run")
                        : m_state.counters[n] > 0
                            ? tr("its count is %1: it still waits for gradients").arg(m_state.counters[n])
                            : tr("it is ready, but another node gets there first");
    answer.verdict = tr("Not %1: %2. Try again.").arg(named, why);
  }
  emit answered(answer);
}

}  // namespace ddpscope::gui
