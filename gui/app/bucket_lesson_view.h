// BucketLessonView: a rank's DDP iterations (ddp_lesson.h), ZeRO's and the hang lesson's
// too. Its stage is the rank's autograd graph; its panel the iteration's buckets filling,
// reducing and (ZeRO) stepped. Run live re-records with a bucket cap, an unused layer on
// rank 1 and find_unused_parameters.
#pragma once

#include "lesson_view.h"

class QCheckBox;
class QDoubleSpinBox;

namespace ddpscope::gui {

class BucketFillView;
class LessonGraphStage;

class BucketLessonView : public LessonView {
  Q_OBJECT

 public:
  explicit BucketLessonView(QObject* parent = nullptr);
  const char* name() const override { return "buckets"; }
  QWidget* stage() override;
  QWidget* panel() override;
  QWidget* options() override { return m_options; }
  GraphView* graph() override;
  void setLesson(const Lesson& lesson) override;
  void showState(const LessonState& state, size_t applied, bool asking) override;
  QString title(const Lesson& lesson) const override;
  QString question(const LessonStep& next) const override;
  QString about(const QString& about, const Lesson& lesson, const std::string& runConfig) const override;
  void setOptions(const LessonInfo& info) override;
  void readOptions(LiveParameters& p) const override;

  BucketFillView* bucketView() const { return m_buckets; }
  QDoubleSpinBox* bucketCapBox() const { return m_bucketCap; }
  QCheckBox* unusedBox() const { return m_unused; }
  QCheckBox* findUnusedBox() const { return m_findUnused; }

 private:
  LessonGraphStage* m_graph = nullptr;
  BucketFillView* m_buckets = nullptr;
  QWidget* m_options = nullptr;
  QDoubleSpinBox* m_bucketCap = nullptr;
  QCheckBox* m_unused = nullptr;      // rank 1 skips a layer
  QCheckBox* m_findUnused = nullptr;  // find_unused_parameters
};

}  // namespace ddpscope::gui
