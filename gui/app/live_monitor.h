// LiveMonitor: a running job at a glance: progress bar, status, Stop, and four charts
// that follow the run file as it grows: loss and samples/s per iteration, iteration time
// per rank, and the overlap ratio per rank and iteration.
#pragma once

#include <QWidget>
#include <map>

#include "run_data.h"

class QChart;
class QChartView;
class QLabel;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QValueAxis;

namespace ddpscope::gui {

class LiveMonitor : public QWidget {
  Q_OBJECT

 public:
  explicit LiveMonitor(QWidget* parent = nullptr);

  void setProgress(int iteration, int total, double loss, double samplesPerSecond);
  void setStatus(const QString& text, bool running);
  void setRun(const RunData& run);  // redraws the charts from the run's metrics
  void clear();

  QProgressBar* progressBar() const { return m_progress; }
  QPushButton* stopButton() const { return m_stop; }
  QLabel* statusLabel() const { return m_status; }
  // Points on the charts: loss, samples/s, iteration times, overlap ratios.
  int pointCount(const QString& chart) const;

 signals:
  void stopRequested();

 private:
  struct Chart {
    QChartView* view = nullptr;
    QValueAxis* x = nullptr;
    QValueAxis* y = nullptr;
    std::map<int, QLineSeries*> series;  // by rank (or 0 for job-wide ones)
  };
  Chart makeChart(const QString& title, const QString& yTitle);
  QLineSeries* seriesFor(Chart& chart, int key, const QString& name);
  static void fit(Chart& chart);

  QProgressBar* m_progress;
  QLabel* m_status;
  QPushButton* m_stop;
  Chart m_loss, m_rate, m_iterationMs, m_overlap;
};

}  // namespace ddpscope::gui
