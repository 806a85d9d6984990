#include "links_page.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <cmath>

#include "empty_state.h"
#include "link_matrix_view.h"
#include "run_data.h"

namespace ddpscope::gui {

LinksPage::LinksPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  auto* content = new QWidget;
  auto* contentLayout = new QVBoxLayout(content);
  contentLayout->setContentsMargins(0, 0, 0, 0);
  m_headline = new QLabel;
  m_headline->setWordWrap(true);
  m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
  contentLayout->addWidget(m_headline);
  auto* bar = new QHBoxLayout;
  m_measure = new QComboBox;
  m_level = new QComboBox;
  m_level->addItem(tr("ranks"), static_cast<int>(LinkLevel::Ranks));
  m_level->addItem(tr("hosts"), static_cast<int>(LinkLevel::Hosts));
  bar->addWidget(new QLabel(tr("Colour:")));
  bar->addWidget(m_measure);
  bar->addWidget(new QLabel(tr("Between:")));
  bar->addWidget(m_level);
  bar->addStretch(1);
  contentLayout->addLayout(bar);
  m_view = new LinkMatrixView;
  contentLayout->addWidget(m_view, 1);
  m_empty = new EmptyState(content);
  layout->addWidget(m_empty, 1);
  connect(m_measure, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
  connect(m_level, &QComboBox::currentIndexChanged, this, [this] { rebuild(); });
}

// The measures the run has: the measured rate only with a link test, the achieved rate
// only with rated traffic; bytes always. The first of them is chosen for a new run.
void LinksPage::fillMeasures() {
  QSignalBlocker block(m_measure);
  const int keep = m_measure->currentData().toInt();
  m_measure->clear();
  bool achieved = false;
  for (const auto& l : m_run->links.links)
    achieved = achieved || !std::isnan(l.achieved_gbps());
  if (m_run->links.measured)
    m_measure->addItem(tr(linkMeasureLabel(LinkMeasure::Measured)), static_cast<int>(LinkMeasure::Measured));
  if (achieved)
    m_measure->addItem(tr(linkMeasureLabel(LinkMeasure::Achieved)), static_cast<int>(LinkMeasure::Achieved));
  m_measure->addItem(tr(linkMeasureLabel(LinkMeasure::Bytes)), static_cast<int>(LinkMeasure::Bytes));
  const int index = m_measure->findData(keep);
  m_measure->setCurrentIndex(index >= 0 ? index : 0);
}

void LinksPage::setRun(std::shared_ptr<const RunData> run) {
  m_run = std::move(run);
  if (!m_run) return;
  const probes::LinkReport& r = m_run->links;
  if (r.links.empty() && m_run->run.world_size < 2) {
    m_empty->setEmpty(tr("This run has one rank: there is no link between ranks to show."));
    return;
  }
  if (r.links.empty()) {
    m_empty->setEmpty(
        tr("No link between two named ranks in this run: no link test, no point-to-point or RPC traffic, no ring "
           "allreduce (collectives through MPI or NCCL name no pairs).\n\nRecord with ddpscope-cli train "
           "--measure-links to time every link before training; then this tab shows each pair's rate and names "
           "a slow link or host."));
    return;
  }
  m_empty->setEmpty(QString());
  fillMeasures();
  QString text = r.slow ? tr("<b>Slow link:</b> %1.").arg(QString::fromStdString(r.slow->text).toHtmlEscaped())
                        : (r.measured ? tr("No link is markedly slower than the others (measured by --measure-links).")
                                      : tr("No link is markedly slower than the others in the traffic seen."));
  if (!std::isnan(r.ring_ceiling_gbps))
    text += tr(" Ring ceiling: %1 (the slowest measured link between neighbouring ranks).")
                .arg(QString::fromStdString(probes::link_rate_text(r.ring_ceiling_gbps)));
  if (!r.measured) text += tr(" No link was measured: record with train --measure-links for each link's ceiling.");
  m_headline->setText(text);
  rebuild();
}

void LinksPage::rebuild() {
  if (!m_run || m_run->links.links.empty()) return;
  const auto measure = static_cast<LinkMeasure>(m_measure->currentData().toInt());
  const auto level = static_cast<LinkLevel>(m_level->currentData().toInt());
  m_view->setGrid(makeLinkGrid(m_run->links, measure, level, m_run->run.world_size),
                  std::shared_ptr<const probes::LinkReport>(m_run, &m_run->links));
}

QString LinksPage::headline() const { return m_headline->text(); }

void LinksPage::showRun(const ShownRun& shown) { setRun(shown.run); }

std::optional<QString> LinksPage::whyEmpty(const RunData* run) const {
  // With a run, the page says itself why it has no link to show (one rank, no traffic).
  if (run) return std::nullopt;
  return noRunOpen();
}

}  // namespace ddpscope::gui
