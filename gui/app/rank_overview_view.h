// RankOverviewView: the heat map of a RankOverview, one row per rank (in its order), one
// column per iteration, each cell coloured by its value from pale (the 2nd percentile)
// to dark red (the 98th). With more ranks than the height shows at 3 px a row, the
// first rows (the slowest, in that order) keep 14 px each over a third of the height
// and the others share the rest; where a pixel covers several cells it shows the
// largest value, so a straggler among a thousand ranks still shows. Hover for a cell's
// rank, host, iteration and value; a click asks for that rank's iteration in the
// timeline.
#pragma once

#include <QImage>
#include <vector>
#include <QWidget>

#include "rank_overview.h"

namespace ddpscope::gui {

class RankOverviewView : public QWidget {
  Q_OBJECT

 public:
  explicit RankOverviewView(QWidget* parent = nullptr);
  void setOverview(RankOverview overview);
  const RankOverview& overview() const { return m_overview; }
  // The (row, column) of the overview drawn at `pos`, the largest value where a pixel
  // covers several; (-1, -1) outside the map.
  std::pair<int, int> cellAt(QPoint pos) const;
  // Where cell (row, column) is drawn (its centre), for tests.
  QPoint pointOf(size_t row, size_t column) const;
  QRect mapRect() const;
  size_t focusRows() const;  // rows drawn kFocusRow high at the top (0: all alike)
  // The rows that get a label: every row whose label fits beside it without touching the
  // one above, so every row when they are tall enough, else every k-th.
  std::vector<size_t> labelledRows() const;
  static constexpr int kFocusRow = 14;
  static QColor colorOf(double value, double low, double high);
  QSize sizeHint() const override { return {800, 600}; }

 signals:
  void cellClicked(int rank, qint64 iteration);

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;  // tooltips

 private:
  void rebuildImage();
  // The overview rows [first, last) a pixel row covers, and likewise for columns.
  std::pair<size_t, size_t> rowsAt(int y) const;
  // Where row `i` starts (y), given the rows kept large at the top.
  double rowTop(size_t i) const;
  double restRowHeight() const;
  std::pair<size_t, size_t> columnsAt(int x) const;

  RankOverview m_overview;
  QImage m_image;  // the map at its drawn size: painting is one blit
};

}  // namespace ddpscope::gui
