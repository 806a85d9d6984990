#include "hang_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ddpscope::gui {
namespace {

// "2 (buckets 1, 3)": the count first, as `ddpscope-cli hang` prints it, then which
// (a bare "0" read as a count of none).
QString bucketCount(const std::vector<int>& v) {
  if (v.empty()) return QStringLiteral("0");
  QStringList ids;
  for (int x : v)
    ids << QString::number(x);
  return QStringLiteral("%1 (%2 %3)")
      .arg(v.size())
      .arg(v.size() == 1 ? QStringLiteral("bucket") : QStringLiteral("buckets"), ids.join(QStringLiteral(", ")));
}

}  // namespace

HangView::HangView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  m_headline = new QLabel(tr("Open a run or launch a job: each rank's position is shown here."));
  m_headline->setWordWrap(true);
  m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_findings = new QLabel;
  m_findings->setWordWrap(true);
  m_findings->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_table = new QTableWidget(0, 7);
  m_table->setHorizontalHeaderLabels({tr("Rank"), tr("Iteration"), tr("Phase"), tr("Blocked in"),
                                      tr("Buckets waiting for gradients"), tr("Buckets waiting for allreduce"),
                                      tr("Gradients not arrived")});
  m_table->verticalHeader()->hide();
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->horizontalHeader()->setStretchLastSection(true);
  // Rows in rank order until the user clicks a header (enabling sorting would otherwise
  // sort by the first column, descending).
  m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  m_table->setSortingEnabled(true);
  layout->addWidget(m_headline);
  layout->addWidget(m_findings);
  layout->addWidget(m_table, 1);
}

void HangView::setReport(const probes::HangReport& report, const QString& headline, bool alarm) {
  m_headline->setText(headline);
  m_headline->setStyleSheet(alarm ? QStringLiteral("background: #fdecea; color: #8b1a10; "
                                                   "padding: 6px; font-weight: bold")
                                  : QStringLiteral("padding: 6px"));
  QStringList lines;
  for (const auto& f : report.findings) {
    // The verdict is said once: in the headline when it carries it.
    if (f == report.verdict && headline.contains(QString::fromStdString(f))) continue;
    lines << QStringLiteral("• ") + QString::fromStdString(f).toHtmlEscaped();
  }
  m_findings->setText(lines.join(QStringLiteral("<br>")));
  // Filled unsorted (rows would move under the loop), then sorted as the user last chose.
  m_table->setSortingEnabled(false);
  m_table->setRowCount(static_cast<int>(report.ranks.size()));
  int row = 0;
  for (const auto& st : report.ranks) {
    QString blocked = QStringLiteral("–");
    if (st.blocked_in) {
      blocked = tr("%1 #%2 for %3 s")
                    .arg(QString::fromStdString(st.blocked_in->op))
                    .arg(st.blocked_in->seq)
                    .arg((report.now_ns - st.blocked_in->started_ns) / 1e9, 0, 'f', 1);
    }
    QStringList missing;
    for (const auto& name : st.missing_grads)
      missing << QString::fromStdString(name);
    QString missingText = st.params_total == 0 ? QStringLiteral("–")
                          : missing.isEmpty()  ? tr("none (all %1 arrived)").arg(st.params_total)
                                               : tr("%1 of %2: %3")
                                                    .arg(missing.size())
                                                    .arg(st.params_total)
                                                    .arg(missing.mid(0, 8).join(QStringLiteral(", ")) +
                                                         (missing.size() > 8 ? QStringLiteral(", …") : QString()));
    const QStringList cells = {QString::number(st.rank),
                               QString::number(st.current_iteration),
                               QString::fromStdString(st.phase),
                               blocked,
                               bucketCount(st.buckets_waiting_for_grads),
                               bucketCount(st.buckets_waiting_for_allreduce),
                               missingText};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      // Rank and iteration sort as numbers.
      if (c == 0) item->setData(Qt::DisplayRole, st.rank);
      if (c == 1) item->setData(Qt::DisplayRole, QVariant::fromValue<qlonglong>(st.current_iteration));
      if (c == 6) item->setToolTip(missing.join(QStringLiteral("\n")));
      if (st.blocked_in && c == 3) item->setBackground(QColor(0xfd, 0xec, 0xea));
      m_table->setItem(row, c, item);
    }
    ++row;
  }
  m_table->setSortingEnabled(true);
  m_table->resizeColumnsToContents();
}

QString HangView::headline() const { return m_headline->text(); }
QString HangView::findings() const { return m_findings->text(); }

}  // namespace ddpscope::gui
