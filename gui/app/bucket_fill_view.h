// BucketFillView: a DDP lesson's buckets at the current step, one bar each: how much of
// it has arrived, and its phase (filling, ready, reducing, reduced) by colour; under ZeRO,
// how many of its parameters this rank updates and whether it has.
#pragma once

#include <QStringList>
#include <QWidget>
#include <vector>

#include "lesson.h"

class QPainter;

namespace ddpscope::gui {

class BucketFillView : public QWidget {
  Q_OBJECT

 public:
  explicit BucketFillView(QWidget* parent = nullptr);
  void setBuckets(const std::vector<BucketFill>& buckets, int generation);
  const std::vector<BucketFill>& buckets() const { return m_buckets; }
  // Lines cut short ("...") at the last paint: none where the view has the room.
  int elidedLines() const { return m_elided; }
  QSize sizeHint() const override {
    return {320, 40 + rowHeight() * static_cast<int>(std::max<size_t>(m_buckets.size(), 2))};
  }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  int rowHeight() const;  // a ZeRO lesson's rows have a third line
  void drawFitted(QPainter& p, const QRect& box, const QStringList& longestFirst);
  int m_elided = 0;

  std::vector<BucketFill> m_buckets;
  int m_generation = 0;
};

}  // namespace ddpscope::gui
