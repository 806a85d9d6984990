// AutogradLessonView: a distributed autograd lesson (lesson.h). Its stage is the pass's
// graph across workers, with the other mode's recording below it when shown side by side
// (lesson 2: FAST and SMART stepped together); its panel the messages so far (those in
// flight dashed), the messages in flight and the gradients in the context. Run live
// re-records its example in the mode chosen.
#pragma once

#include "lesson_view.h"

class QComboBox;
class QLabel;
class QListWidget;
class QSplitter;

namespace ddpscope::gui {

class LessonGraphStage;
class SequenceView;

class AutogradLessonView : public LessonView {
  Q_OBJECT

 public:
  explicit AutogradLessonView(QObject* parent = nullptr);
  const char* name() const override { return "graph"; }
  QWidget* stage() override;
  QWidget* panel() override { return m_panel; }
  QWidget* options() override { return m_modeField; }
  GraphView* graph() override;
  void setLesson(const Lesson& lesson) override;
  void showState(const LessonState& state, size_t applied, bool asking) override;
  QString title(const Lesson& lesson) const override;
  QString question(const LessonStep& next) const override;
  void setOptions(const LessonInfo& info) override;
  void readOptions(LiveParameters& p) const override;

  // Side by side: another recording's first pass (lesson_request.h reads it), stepped
  // along with the lesson. clearCompared() forgets it.
  void setCompared(const Lesson& lesson);
  void clearCompared();
  void setSideBySide(bool on);
  const Lesson& compared() const { return m_compare; }

  QComboBox* modeBox() const { return m_mode; }
  SequenceView* sequence() const { return m_sequence; }
  QListWidget* inFlightList() const { return m_inFlight; }
  QListWidget* gradientList() const { return m_gradients; }
  GraphView* compareGraph() const;
  QLabel* compareExplanation() const { return m_compareExplanation; }

 private:
  void buildStage();
  void buildPanel();
  void showCompare();

  const Lesson* m_lesson = &noLesson();
  size_t m_applied = 0;
  Lesson m_compare;
  bool m_sideBySide = false;
  QSplitter* m_graphs = nullptr;  // the graph above, the compared graph below
  LessonGraphStage* m_graph = nullptr;
  LessonGraphStage* m_compareGraph = nullptr;
  QWidget* m_comparePane = nullptr;
  QLabel* m_compareExplanation = nullptr;
  QWidget* m_panel = nullptr;
  SequenceView* m_sequence = nullptr;
  QListWidget* m_inFlight = nullptr;
  QListWidget* m_gradients = nullptr;
  QWidget* m_modeField = nullptr;
  QComboBox* m_mode = nullptr;
};

}  // namespace ddpscope::gui
