#include "bucket_fill_view.h"

#include <QPainter>

#include "kind_colors.h"

namespace ddpscope::gui {
namespace {

QColor colourOf(BucketFill::Phase phase) {
  switch (phase) {
    case BucketFill::Phase::Filling: return QColor(0x9e, 0xc5, 0xe8);
    case BucketFill::Phase::Ready: return QColor(0xf5, 0x85, 0x18);
    case BucketFill::Phase::Reducing: return kindColor(probes::Kind::Allreduce);
    case BucketFill::Phase::Reduced:
    default: return QColor(0x2c, 0x6e, 0x2a);
  }
}

const char* nameOf(BucketFill::Phase phase) {
  switch (phase) {
    case BucketFill::Phase::Filling: return "filling";
    case BucketFill::Phase::Ready: return "ready, waiting to launch";
    case BucketFill::Phase::Reducing: return "allreduce running";
    case BucketFill::Phase::Reduced:
    default: return "reduced";
  }
}

}  // namespace

BucketFillView::BucketFillView(QWidget* parent) : QWidget(parent) { setMinimumHeight(110); }

int BucketFillView::rowHeight() const {
  const bool zero = !m_buckets.empty() && m_buckets.front().params_owned >= 0;
  return zero ? 50 : 34;
}

void BucketFillView::setBuckets(const std::vector<BucketFill>& buckets, int generation) {
  m_buckets = buckets;
  m_generation = generation;
  updateGeometry();
  update();
}

void BucketFillView::drawFitted(QPainter& p, const QRect& box, const QStringList& longestFirst) {
  const QFontMetrics fm(p.font());
  for (const QString& text : longestFirst) {
    if (fm.horizontalAdvance(text) <= box.width()) {
      p.drawText(box, Qt::AlignLeft | Qt::AlignVCenter, text);
      return;
    }
  }
  ++m_elided;
  p.drawText(box, Qt::AlignLeft | Qt::AlignVCenter, fm.elidedText(longestFirst.back(), Qt::ElideRight, box.width()));
}

void BucketFillView::paintEvent(QPaintEvent*) {
  m_elided = 0;
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(6, 2, width() - 12, 20), Qt::AlignLeft | Qt::AlignVCenter,
             m_buckets.empty()   ? tr("Buckets: before the first iteration")
             : m_generation == 0 ? tr("Buckets as assigned (generation 0)")
                                 : tr("Buckets rebuilt from the ready order (generation 1)"));
  const int barLeft = 70, barWidth = std::max(40, width() - barLeft - 10);
  for (size_t b = 0; b < m_buckets.size(); ++b) {
    const BucketFill& f = m_buckets[b];
    const int y = 26 + static_cast<int>(b) * rowHeight();
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(6, y, barLeft - 8, 18), Qt::AlignLeft | Qt::AlignVCenter, tr("bucket %1").arg(b));
    p.setPen(palette().color(QPalette::Mid));
    p.setBrush(Qt::NoBrush);
    p.drawRect(barLeft, y, barWidth, 16);
    const double share =
        f.bytes_total > 0 ? static_cast<double>(f.bytes_ready) / static_cast<double>(f.bytes_total) : 0;
    p.fillRect(QRectF(barLeft + 1, y + 1, (barWidth - 1) * share, 15), colourOf(f.phase));
    p.setPen(palette().color(QPalette::Text));
    const QString phase =
        f.phase == BucketFill::Phase::Filling && f.params_total > 0 && f.params_ready == f.params_total
            ? tr("full, waits for a bucket before it")
            : tr(nameOf(f.phase));
    // The long form when it fits the bar, a short one when not (half a laptop's window),
    // elided only when even that does not fit.
    drawFitted(p, QRect(barLeft, y + 16, barWidth, 16),
               {tr("%1 of %2 gradients · %3 of %4 KiB · %5")
                    .arg(f.params_ready)
                    .arg(f.params_total)
                    .arg(f.bytes_ready / 1024)
                    .arg(f.bytes_total / 1024)
                    .arg(phase),
                tr("%1/%2 grads · %3/%4 KiB · %5")
                    .arg(f.params_ready)
                    .arg(f.params_total)
                    .arg(f.bytes_ready / 1024)
                    .arg(f.bytes_total / 1024)
                    .arg(phase),
                tr("%1/%2 grads · %3").arg(f.params_ready).arg(f.params_total).arg(phase),
                tr("%1/%2 grads · %3")
                    .arg(f.params_ready)
                    .arg(f.params_total)
                    .arg(phase == tr(nameOf(f.phase)) ? phase : tr("full, queued"))});
    if (f.params_owned >= 0) {  // ZeRO: a third line, this rank's share
      drawFitted(p, QRect(barLeft, y + 32, barWidth, 16),
                 {f.params_owned == 0 ? tr("ZeRO: all of them are other ranks' to update")
                  : f.stepped         ? tr("ZeRO: this rank updated its %1 of them").arg(f.params_owned)
                                      : tr("ZeRO: this rank updates %1 of them").arg(f.params_owned),
                  f.params_owned == 0 ? tr("ZeRO: none of them this rank's")
                                      : tr("ZeRO: %1 of them this rank's").arg(f.params_owned)});
    }
  }
}

}  // namespace ddpscope::gui
