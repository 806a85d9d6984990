#include "buckets_page.h"

#include "plural.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QSplitter>
#include <set>

#include "bucket_advice_view.h"
#include "bucket_table_model.h"
#include "empty_state.h"
#include "parameter_bucket_model.h"
#include "sortable_table.h"

namespace ddpscope::gui {

BucketsPage::BucketsPage(QWidget* parent)
    : QWidget(parent), m_buckets(new BucketTableModel(this)), m_params(new ParameterBucketModel(this)) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  m_rank = new QComboBox;
  m_iteration = new QSpinBox;
  bar->addWidget(new QLabel(tr("Rank")));
  bar->addWidget(m_rank);
  bar->addWidget(new QLabel(tr("Iteration")));
  bar->addWidget(m_iteration);
  m_rebuildNote = new QLabel;
  m_rebuildNote->setWordWrap(true);  // a long note wraps instead of widening the page
  bar->addWidget(m_rebuildNote, 1);
  layout->addLayout(bar);
  auto* split = new QSplitter(Qt::Vertical);
  m_bucketTable = makeSortableTable(m_buckets);
  m_bucketTable->setWordWrap(false);
  m_bucketTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_bucketTable->horizontalHeader()->setStretchLastSection(true);
  m_paramTable = makeSortableTable(m_params);
  m_paramTable->setWordWrap(false);
  m_paramTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_advice = new BucketAdviceView;
  split->addWidget(m_advice);
  split->addWidget(m_bucketTable);
  split->addWidget(m_paramTable);
  m_empty = new EmptyState(split);
  layout->addWidget(m_empty, 1);
  connect(m_rank, &QComboBox::currentIndexChanged, this, [this] { update(); });
  connect(m_iteration, &QSpinBox::valueChanged, this, [this] { update(); });
}

void BucketsPage::clear() {
  m_buckets->setRun(nullptr, 0, 0);
  m_params->setRun(nullptr, 0);
  m_run.reset();
  m_reader = nullptr;
}

void BucketsPage::setRun(std::shared_ptr<const RunData> run, probes::RunStoreReader* reader, bool keepChoice) {
  m_run = std::move(run);
  m_reader = reader;
  const int rank = m_rank->currentIndex();
  const int iteration = m_iteration->value();
  {
    const QSignalBlocker a(m_rank), b(m_iteration);
    m_rank->clear();
    for (const auto& r : m_run->ranks)
      m_rank->addItem(QString::number(r.rank), r.rank);
    // The iterations as the run numbers them (a profiler's trace may hold 551 and 552).
    int64_t first = 0, last = 0;
    for (const auto& it : m_run->analysis.iterations) {
      first = first == 0 ? it.iteration : std::min(first, it.iteration);
      last = std::max(last, it.iteration);
    }
    if (last == 0) first = last = 1;
    m_iteration->setRange(static_cast<int>(first), static_cast<int>(last));
    if (keepChoice) {
      m_rank->setCurrentIndex(std::max(0, rank));
      m_iteration->setValue(iteration);
    } else {
      m_iteration->setValue(static_cast<int>(std::min(first + 1, last)));  // past the warm-up
    }
  }
  update();
}

QString BucketsPage::rebuildNote() const { return m_rebuildNote->text(); }

void BucketsPage::update() {
  if (!m_run) return;
  const int rank = m_rank->currentData().toInt();
  m_buckets->setRun(m_run.get(), rank, m_iteration->value());
  m_params->setRun(m_run.get(), rank);
  m_paramTable->setColumnHidden(ParameterBucketModel::Owner, !m_params->sharded());
  m_bucketTable->setColumnHidden(BucketTableModel::Owners, !m_params->sharded());
  std::set<int> before, after;
  for (const auto& b : m_run->buckets) {
    if (b.rank == rank) (b.generation == 0 ? before : after).insert(b.bucket);
  }
  m_advice->setRun(m_run->path, m_run->span_count, rank, m_reader);
  QString note;
  if (before.empty() && after.empty()) {
    // No assignment recorded (an imported profiler trace): the rows are the iteration's
    // bucket allreduces as the trace shows them, not "0 buckets".
    const int rows = m_buckets->rowCount();
    note = rows > 0 ? tr("the %1 of this iteration, as the run shows them; which parameters each bucket holds "
                         "is not recorded (a profiler trace does not say)")
                          .arg(countOf(rows, tr("bucket allreduce")))
                    : tr("no buckets recorded for rank %1").arg(rank);
  } else {
    note = after.empty() ? tr("buckets: %1 (not rebuilt yet)").arg(before.size())
                         : tr("buckets: %1 before the rebuild, %2 after (from the observed "
                              "gradient-ready order)")
                               .arg(before.size())
                               .arg(after.size());
  }
  if (m_params->sharded()) note += tr(" · parameters coloured by the ZeRO rank that updates them");
  m_rebuildNote->setText(note);
}

void BucketsPage::showRun(const ShownRun& shown) { setRun(shown.run, shown.reader, shown.sameRun); }

std::optional<QString> BucketsPage::whyEmpty(const RunData* run) const {
  return !run ? noRunOpen() : run->analysis.iterations.empty() && run->buckets.empty() ? noDdpIterations() : QString();
}

}  // namespace ddpscope::gui
