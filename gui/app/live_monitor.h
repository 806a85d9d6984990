// LiveMonitor: a running job at a glance: progress bar, status, Stop, and four charts
// that follow the run file as it grows: loss and samples/s per iteration, iteration time
// per rank, and the overlap ratio per rank and iteration.
#pragma once

#include <QWidget>
#include <QPointF>
#include <map>
#include <vector>

#include "run_data.h"

class QChart;
class QCheckBox;
class QLogValueAxis;
class QChartView;
class QLabel;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QValueAxis;

namespace ddpscope::gui {

// The axes of a chart of non-negative values: x and y from 0, y to a little above the
// largest value, or with `clip_outliers` (20 points or more, the largest over twice the
// 95th percentile) to 1.5 times the 95th percentile, counting the points above it.
struct AxisFit {
  double x1 = 1, y1 = 1;
  int clipped = 0;
  double max = 0;
};
AxisFit fitAxes(const std::vector<QPointF>& points, bool clip_outliers);

class LiveMonitor : public QWidget {
  Q_OBJECT

 public:
  explicit LiveMonitor(QWidget* parent = nullptr);

  void setProgress(int iteration, int total, double loss, double samplesPerSecond, bool hasLoss = true);
  void setStatus(const QString& text, bool running);
  // A job whose end is not known (a collected one, before its first progress): the bar
  // only shows it is alive, until setStatus(..., false).
  void setUnbounded();
  // Redraws the charts from the run's metrics; the bar shows its last iteration of the
  // job's total (live: never behind the job's own progress).
  void setRun(const RunData& run, bool live = false);
  void showVerdict(const RunData& run, bool live);
  void clear();

  QProgressBar* progressBar() const { return m_progress; }
  QPushButton* stopButton() const { return m_stop; }
  QLabel* statusLabel() const { return m_status; }
  QLabel* verdictLabel() const { return m_verdict; }  // why the iterations are slow (now, when live)
  // Points on the charts: loss, samples/s, iteration times, overlap ratios.
  int pointCount(const QString& chart) const;
  QValueAxis* axis(const QString& chart, Qt::Orientation o) const;
  // The iteration-time chart on a log scale: every point shown (nothing clipped), a
  // 25 s stall and 40 ms iterations both readable.
  void setLogScale(bool on);
  bool logScale() const { return m_logScale; }
  QCheckBox* logScaleBox() const { return m_logBox; }
  QLogValueAxis* logAxis() const { return m_logY; }
  QString monitorTitle(const QString& chart) const;  // the chart's title
  // The status line of a finished run: "job.ddprun: 200 iterations recorded (finished)".
  static QString finishedStatus(const RunData& run, const QString& fileName);

 signals:
  void stopRequested();

 private:
  struct Chart {
    int clipped = 0;        // points above the y axis (outliers)
    double clippedMax = 0;  // the largest of them
    QChartView* view = nullptr;
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;
    std::map<int, QLineSeries*> series;  // by rank (or 0 for job-wide ones)
  };
  Chart makeChart(const QString& title, const QString& yTitle);
  QLineSeries* seriesFor(Chart& chart, int key, const QString& name, bool perRank);
  void fit(Chart& chart, bool clipOutliers);
  void updateIterationTitle();
  // loss | samples | iteration | overlap; nullptr for another name.
  const Chart* chartNamed(const QString& chart) const;

  QProgressBar* m_progress;
  int m_lastIteration = 0;  // the latest the job reported or the file holds
  // The job's last progress line, for a status that follows the file's newer iterations.
  bool m_hasProgress = false;
  QString m_progressLoss;
  double m_progressRate = 0;
  void showProgress(int iteration, int total);
  QLabel* m_status;
  QLabel* m_verdict = nullptr;
  QPushButton* m_stop;
  Chart m_loss, m_rate, m_iterationMs, m_overlap;
  QCheckBox* m_logBox = nullptr;
  QLogValueAxis* m_logY = nullptr;  // the iteration chart's y while on a log scale
  bool m_logScale = false;
  std::pair<double, bool> spanIterations(const RunData& run);
  double m_xEnd = 0;  // the run's last iteration: where every chart's x axis ends
  // Where they begin: 0, or just before the first iteration of a run that holds a sample of
  // a longer job's (a profiler trace of iterations 551 and 552), whose points would
  // otherwise sit at the right edge.
  double m_xBegin = 0;
};

}  // namespace ddpscope::gui
