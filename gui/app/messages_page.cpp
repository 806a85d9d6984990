#include "messages_page.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QIcon>
#include <QPixmap>
#include <QLabel>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "plural.h"

namespace ddpscope::gui {
namespace {

// "0:3" for a context id (the worker that opened it, its counter).
QString contextLabel(int64_t id) {
  const auto u = static_cast<uint64_t>(id);
  return QStringLiteral("%1:%2").arg(u >> 48).arg(u & ((uint64_t{1} << 48) - 1));
}

}  // namespace

MessagesPage::MessagesPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  m_context = new QComboBox;
  // Long context names are elided in the box instead of widening the page.
  m_context->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_context->setMinimumContentsLength(18);
  m_worker = new QComboBox;
  bar->addWidget(new QLabel(tr("Context")));
  bar->addWidget(m_context);
  bar->addWidget(new QLabel(tr("Worker")));
  bar->addWidget(m_worker);
  m_counts = new QLabel;
  m_counts->setWordWrap(true);
  bar->addWidget(m_counts, 1);
  layout->addLayout(bar);
  // The kinds of message, each in its arrows' colour: the legend and the filter in one.
  auto* kinds = new QHBoxLayout;
  kinds->addWidget(new QLabel(tr("Show")));
  for (int k = 0; k < kNumArrowKinds; ++k) {
    const auto kind = static_cast<ArrowKind>(k);
    QPixmap swatch(12, 12);
    swatch.fill(SequenceView::colorOf(kind));
    auto* box = new QCheckBox(QString::fromLatin1(arrowKindName(kind)));
    box->setIcon(QIcon(swatch));
    box->setToolTip(
        tr("Show or hide the %1 arrows (drawn in this colour)").arg(QString::fromLatin1(arrowKindName(kind))));
    box->setChecked(true);
    m_kinds[static_cast<size_t>(k)] = box;
    kinds->addWidget(box);
    connect(box, &QCheckBox::toggled, this, [this] { applyFilter(); });
  }
  kinds->addStretch();
  layout->addLayout(kinds);
  m_view = new SequenceView;
  layout->addWidget(m_view, 1);
  connect(m_context, &QComboBox::currentIndexChanged, this, [this] { applyFilter(); });
  connect(m_worker, &QComboBox::currentIndexChanged, this, [this] { applyFilter(); });
}

void MessagesPage::setRun(const std::shared_ptr<const RunData>& run, bool sameRun) {
  // Shares the run's arrows: no copy.
  std::shared_ptr<const SequenceData> data(run, &run->sequence);
  const QVariant context = m_context->currentData();
  const QVariant worker = m_worker->currentData();
  {
    const QSignalBlocker c(m_context), w(m_worker);
    m_context->clear();
    m_context->addItem(tr("all"), QVariant::fromValue<qlonglong>(-2));
    m_context->addItem(tr("outside contexts"), QVariant::fromValue<qlonglong>(-1));
    for (const auto& [id, workers] : data->contexts) {
      QStringList names;
      for (int w : workers)
        names << QString::number(w);
      m_context->addItem(tr("%1 (workers %2)").arg(contextLabel(id), names.join(", ")),
                         QVariant::fromValue<qlonglong>(id));
    }
    m_worker->clear();
    m_worker->addItem(tr("all"), -1);
    // Each worker the run holds (a wide job's list is its ranks, not 0..N-1).
    for (const auto& r : run->ranks)
      if (r.rank < data->workers) m_worker->addItem(tr("worker %1").arg(r.rank), r.rank);
    if (run->ranks.empty())
      for (int w = 0; w < std::min(data->workers, 4096); ++w)
        m_worker->addItem(tr("worker %1").arg(w), w);
    if (sameRun) {
      m_context->setCurrentIndex(std::max(0, m_context->findData(context)));
      m_worker->setCurrentIndex(std::max(0, m_worker->findData(worker)));
    }
  }
  if (sameRun) {
    m_view->updateData(std::move(data));
  } else {
    m_view->setData(std::move(data));
  }
  applyFilter();
}

void MessagesPage::applyFilter() {
  SequenceFilter f;
  f.ctx_id = m_context->currentData().isValid() ? m_context->currentData().toLongLong() : -2;
  f.worker = m_worker->currentData().isValid() ? m_worker->currentData().toInt() : -1;
  f.kinds = 0;
  for (int k = 0; k < kNumArrowKinds; ++k)
    if (m_kinds[static_cast<size_t>(k)]->isChecked()) f.kinds |= 1u << k;
  m_view->setFilter(f);
  const SequenceData& d = m_view->data();
  int64_t shown = 0;
  for (const auto& a : d.arrows)
    shown += f.accepts(a);
  m_counts->setText(tr("%1 of %2 · %3 never received")
                        .arg(shown)
                        .arg(countOf(static_cast<qint64>(d.arrows.size()), tr("message")))
                        .arg(d.in_flight));
}

void MessagesPage::showRun(const ShownRun& shown) { setRun(shown.run, shown.sameRun); }

std::optional<QString> MessagesPage::whyEmpty(const RunData* run) const {
  if (!run) return noRunOpen();
  if (!run->sequence.arrows.empty()) return QString();
  return tr(
      "No RPC messages in this run: DDP jobs talk through collectives, which the "
      "Timeline and Overlap tabs show.\n\nRPC runs come from ddpscope-cli example "
      "(seed, chain, rref, parameter-server).");
}

}  // namespace ddpscope::gui
