// BucketAdviceView: the Buckets tab's advice curve. Predicted iteration time against
// bucket_cap_mb (log scale), from the open run (probes::advise_buckets, as
// `ddpscope-cli advise` prints it), with the run's own cap marked at its measured time
// and the best cap named in the title.
#pragma once

#include <QChartView>
#include <QElapsedTimer>
#include <string>

#include "bucket_advice.h"

namespace ddpscope::gui {

class BucketAdviceView : public QChartView {
  Q_OBJECT

 public:
  explicit BucketAdviceView(QWidget* parent = nullptr);
  // Predicts again when the run or rank changed, or (a growing run) at most every 5 s.
  // `reader`: the open run's reader when the window keeps one (else opened from `path`).
  void setRun(const std::string& path, int64_t spans, int rank, probes::RunStoreReader* reader = nullptr);
  const probes::BucketAdvice& advice() const { return m_advice; }
  bool hasAdvice() const { return !m_advice.predictions.empty(); }
  QString title() const;  // the chart's title, whole (the chart shows it wrapped)

 private:
  void draw(const QString& error);
  std::pair<double, double> addSeries(QChart* chart);
  void addAxes(QChart* chart, double lo, double hi);
  QString adviceTitle() const;

  probes::BucketAdvice m_advice;
  std::string m_path;
  int64_t m_spans = -1;
  int m_rank = -1;
  QElapsedTimer m_since;
  QString m_title;
};

}  // namespace ddpscope::gui
