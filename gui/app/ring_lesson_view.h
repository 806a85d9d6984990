// RingLessonView: the ring allreduce (ring_lesson.h). Its stage is a row per rank and a
// column per block, each cell saying whose values it sums; its panel what each rank has
// sent so far against the tensor's size. Predict mode asks which block a rank sends next.
#pragma once

#include "lesson_view.h"

class QLabel;

namespace ddpscope::gui {

class RingView;

class RingLessonView : public LessonView {
  Q_OBJECT

 public:
  explicit RingLessonView(QObject* parent = nullptr);
  const char* name() const override { return "ring"; }
  QWidget* stage() override;
  QWidget* panel() override { return m_panel; }
  void setLesson(const Lesson& lesson) override;
  void showState(const LessonState& state, size_t applied, bool asking) override;
  QString title(const Lesson& lesson) const override;
  QString question(const LessonStep& next) const override;

  RingView* ringView() const { return m_ring; }

 private:
  void judge(int rank, int block);

  const Lesson* m_lesson = &noLesson();
  size_t m_applied = 0;
  bool m_asking = false;
  RingView* m_ring = nullptr;
  QWidget* m_panel = nullptr;
  QLabel* m_tally = nullptr;  // bytes sent per rank so far
};

}  // namespace ddpscope::gui
