#include "autograd_lesson_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QSplitter>
#include <QVBoxLayout>

#include "lesson_graph_stage.h"
#include "sequence_view.h"
#include "user_message.h"

namespace ddpscope::gui {

AutogradLessonView::AutogradLessonView(QObject* parent) : LessonView(parent) {
  buildStage();
  buildPanel();
  m_mode = new QComboBox;
  m_mode->addItems({QStringLiteral("fast"), QStringLiteral("smart")});
  m_modeField = new QWidget;
  auto* row = new QHBoxLayout(m_modeField);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(new QLabel(tr("Mode")));
  row->addWidget(m_mode);
  connect(m_graph, &LessonGraphStage::answered, this, &LessonView::answered);
}

QWidget* AutogradLessonView::stage() { return m_graphs; }
GraphView* AutogradLessonView::graph() { return m_graph; }
GraphView* AutogradLessonView::compareGraph() const { return m_compareGraph; }

void AutogradLessonView::buildStage() {
  m_graphs = new QSplitter(Qt::Vertical);
  m_graph = new LessonGraphStage;
  m_graphs->addWidget(m_graph);
  m_comparePane = new QWidget;
  auto* compareLayout = new QVBoxLayout(m_comparePane);
  compareLayout->setContentsMargins(0, 0, 0, 0);
  m_compareExplanation = new QLabel;
  m_compareExplanation->setWordWrap(true);
  m_compareGraph = new LessonGraphStage;
  compareLayout->addWidget(m_compareExplanation);
  compareLayout->addWidget(m_compareGraph, 1);
  m_graphs->addWidget(m_comparePane);
  m_comparePane->hide();
}

void AutogradLessonView::buildPanel() {
  m_panel = new QWidget;
  auto* layout = new QVBoxLayout(m_panel);
  layout->setContentsMargins(0, 0, 0, 0);
  m_sequence = new SequenceView;
  m_sequence->setFocusPolicy(Qt::NoFocus);
  m_sequence->setMinimumHeight(110);
  m_inFlight = new QListWidget;
  m_inFlight->setFocusPolicy(Qt::NoFocus);
  m_gradients = new QListWidget;
  m_gradients->setFocusPolicy(Qt::NoFocus);
  layout->addWidget(m_sequence, 2);
  layout->addWidget(new QLabel(tr("Messages in flight")));
  layout->addWidget(m_inFlight, 1);
  layout->addWidget(new QLabel(tr("Gradients in the context")));
  layout->addWidget(m_gradients, 1);
}

void AutogradLessonView::setLesson(const Lesson& lesson) {
  m_lesson = &lesson;
  m_graph->setLesson(lesson);
  m_sequence->setData(std::make_shared<const SequenceData>(lessonSequence(lesson, 0)));
}

QString AutogradLessonView::title(const Lesson& lesson) const {
  return tr("context %1 · pass %2")
      .arg(QString::fromStdString(formatGlobalId(lesson.ctx_id)), QString::fromStdString(formatGlobalId(lesson.pass)));
}

QString AutogradLessonView::question(const LessonStep&) const { return LessonGraphStage::question(); }

void AutogradLessonView::showState(const LessonState& s, size_t applied, bool asking) {
  m_applied = applied;
  m_graph->showState(s, applied, asking);
  const auto& steps = m_lesson->steps;
  m_sequence->updateData(std::make_shared<const SequenceData>(lessonSequence(*m_lesson, applied)));
  m_sequence->setNow(applied > 0 ? steps[applied - 1].t_ns : steps.empty() ? -1 : steps.front().t_ns);
  m_inFlight->clear();
  for (size_t k : s.in_flight) {
    const LessonStep& m = steps[k];
    m_inFlight->addItem(tr("%1 from worker %2 to worker %3: '%4', %5 B")
                            .arg(QString::fromStdString(formatGlobalId(m.msg_id)))
                            .arg(m.rank)
                            .arg(m.peer)
                            .arg(QString::fromStdString(m.name == "_ddpscope.dist_backward" ? "gradients" : m.name))
                            .arg(m.bytes));
  }
  m_gradients->clear();
  for (int n : s.accumulated) {
    const GraphNode& g = m_lesson->graph.nodes[static_cast<size_t>(n)];
    m_gradients->addItem(tr("worker %1: %2").arg(g.rank).arg(QString::fromStdString(g.op)));
  }
  for (int worker : s.released)
    m_gradients->addItem(tr("worker %1: context released, its gradients freed").arg(worker));
  showCompare();
}

void AutogradLessonView::setOptions(const LessonInfo& info) {
  if (!info.mode.isEmpty()) m_mode->setCurrentText(info.mode);
}

void AutogradLessonView::readOptions(LiveParameters& p) const { p.mode = m_mode->currentText(); }

void AutogradLessonView::setCompared(const Lesson& lesson) {
  m_compare = lesson;
  m_compareGraph->setLesson(m_compare);
}

void AutogradLessonView::clearCompared() {
  m_compare = Lesson();
  m_compareGraph->setLesson(m_compare);
}

void AutogradLessonView::setSideBySide(bool on) {
  m_sideBySide = on;
  m_comparePane->setVisible(on);
  if (!on) return;
  const int half = std::max(200, m_graphs->height() / 2);
  m_graphs->setSizes({half, half});  // the two runs get the same room
  showCompare();
}

// Step k of each: the two runs share their forward, then part ways.
void AutogradLessonView::showCompare() {
  if (!m_sideBySide || m_compare.steps.empty()) return;
  const size_t k = std::min(m_applied, m_compare.steps.size());
  m_compareGraph->showState(m_compare.stateAfter(k), 0, false);
  m_compareExplanation->setText(
      tr("<b>Side by side</b> (step %1 of %2): %3")
          .arg(k)
          .arg(m_compare.steps.size())
          .arg(k == 0 ? tr("not started") : QString::fromStdString(m_compare.explain(k - 1)).toHtmlEscaped()));
}

}  // namespace ddpscope::gui
