// LinkMatrixView: the heat map of a LinkGrid, senders down, receivers across, each cell
// coloured by how much it calls for a look (RankOverviewView's scale: pale to dark red):
// the slowest links or the most bytes darkest. The map is drawn once into an image at its
// drawn size (a pixel covering several cells shows their worst), so a frame is one blit at
// any number of ranks. Hover for a cell's pair, rates and bytes.
#pragma once

#include <QImage>
#include <QWidget>

#include "link_grid.h"

namespace ddpscope::gui {

class LinkMatrixView : public QWidget {
  Q_OBJECT

 public:
  explicit LinkMatrixView(QWidget* parent = nullptr);
  // The grid and the report it was made from (for the tooltips' full figures).
  void setGrid(LinkGrid grid, std::shared_ptr<const probes::LinkReport> report);
  const LinkGrid& grid() const { return m_grid; }
  QRect mapRect() const;
  // The (sender, receiver) drawn at `pos`; (-1, -1) outside the map.
  std::pair<int, int> cellAt(QPoint pos) const;
  QPoint pointOf(size_t src, size_t dst) const;  // the cell's centre, for tests
  // The cells a pixel row (column) of the map covers: [first, last).
  std::pair<size_t, size_t> cellsAt(int pixel, int length) const;
  QSize sizeHint() const override { return {700, 600}; }

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  bool event(QEvent* event) override;  // tooltips

 private:
  void rebuildImage();
  void paintLabels(QPainter& p, const QRect& map);
  void paintValues(QPainter& p, const QRect& map);
  void paintLegend(QPainter& p, const QRect& map);

  LinkGrid m_grid;
  std::shared_ptr<const probes::LinkReport> m_report;
  QImage m_image;  // the map at its drawn size
};

}  // namespace ddpscope::gui
