#include "hang_view.h"

#include "flight_grid.h"
#include "hang_stacks.h"
#include "slow_cause_text.h"
#include "stack_panel.h"

#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
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

// Cell colours by state; one legend says which is which.
QColor stateColor(int state) {
  switch (state) {
    case 2: return {0xd8, 0xef, 0xd8};   // completed
    case 1: return {0xff, 0xd8, 0x8a};   // started: waiting in it
    case 0: return {0xd6, 0xe4, 0xf5};   // scheduled
    default: return {0xee, 0xee, 0xee};  // never called (or no longer held)
  }
}

QString cellTip(const probes::CollectiveRow& c) {
  QString tip = QStringLiteral("rank %1, %2 #%3: %4\n%5")
                    .arg(c.rank)
                    .arg(QString::fromStdString(c.pg_name))
                    .arg(c.collective_seq)
                    .arg(QString::fromStdString(probes::call_text(c)), QString::fromStdString(c.state));
  if (!c.phase.empty())
    tip += QStringLiteral("\n%1, iteration %2").arg(QString::fromStdString(c.phase)).arg(c.iteration);
  if (c.timeout_ms > 0) tip += QStringLiteral("\ntimeout %1 ms").arg(c.timeout_ms);
  for (const auto& f : c.frames)
    tip +=
        QStringLiteral("\n  %1  %2:%3").arg(QString::fromStdString(f.name), QString::fromStdString(f.file)).arg(f.line);
  return tip;
}

}  // namespace

HangView::HangView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  m_headline = new QLabel(tr("Open a run or launch a job: each rank's position is shown here."));
  m_headline->setWordWrap(true);
  m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_verdict = new QLabel;
  m_verdict->setWordWrap(true);
  m_verdict->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_verdict->setStyleSheet(QStringLiteral("padding: 4px; font-weight: bold"));
  m_gridTitle = new QLabel;
  m_gridTitle->setWordWrap(true);
  m_grid = new QTableWidget(0, 0);
  m_grid->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_grid->setSelectionMode(QAbstractItemView::SingleSelection);
  m_grid->horizontalHeader()->setDefaultSectionSize(150);
  m_grid->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  m_grid->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);  // rank order until a header is clicked
  m_grid->setSortingEnabled(true);
  connect(m_grid, &QTableWidget::cellClicked, this, [this](int row, int column) {
    const QTableWidgetItem* item = m_grid->item(row, column);
    if (!item || !item->data(Qt::UserRole).isValid()) return;
    emit collectiveClicked(item->data(Qt::UserRole).toInt(), item->data(Qt::UserRole + 1).toLongLong(),
                           item->data(Qt::UserRole + 2).toLongLong(), item->toolTip().section('\n', 0, 0));
  });
  m_findings = new QLabel;
  m_findings->setWordWrap(true);
  m_findings->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_table = new QTableWidget(0, 8);
  // Headers on two lines, so the columns are as wide as their cells (one line hid the last
  // three columns at 1024x700 and 1280x800).
  m_table->setHorizontalHeaderLabels({tr("Rank"), tr("Iteration"), tr("Phase"), tr("Blocked in"),
                                      tr("Buckets waiting\nfor allreduce"), tr("Gradients\nnot arrived"),
                                      tr("Buckets waiting\nfor gradients"), tr("Its code (latest stack)")});
  m_table->verticalHeader()->hide();
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // Columns as wide as their titles and cells: at the default width "Gradients not
  // arrived" showed as "adients not arriv".
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  // A long phase, list of gradients or code position wraps or is cut, whole in its tooltip.
  m_table->horizontalHeader()->setMaximumSectionSize(150);
  // Rows in rank order until the user clicks a header (enabling sorting would otherwise
  // sort by the first column, descending).
  m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  m_table->setSortingEnabled(true);
  layout->addWidget(m_headline);
  layout->addWidget(m_verdict);
  layout->addWidget(m_gridTitle);
  layout->addWidget(m_grid);
  layout->addWidget(m_findings);
  m_ask = new QPushButton(tr("Ask every rank for its stack now"));
  m_ask->setToolTip(
      tr("The job's ranks take every thread's stack (as `ddpscope-cli hang --ask` does); "
         "the table shows where each rank's code stands as they arrive"));
  m_ask->hide();
  connect(m_ask, &QPushButton::clicked, this, &HangView::askForStacks);
  layout->addWidget(m_ask, 0, Qt::AlignLeft);
  // The selected rank's stack beside the table (the culprit's first).
  m_stackPanel = new StackPanel;
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(m_table);
  split->addWidget(m_stackPanel);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->setSelectionMode(QAbstractItemView::SingleSelection);
  connect(m_table, &QTableWidget::itemSelectionChanged, this, &HangView::showStackOfSelectedRank);
  m_verdict->hide();
  m_gridTitle->hide();
  m_grid->hide();
}

void HangView::setAskable(bool askable) { m_ask->setVisible(askable); }

void HangView::setReport(const probes::HangReport& report, const QString& headline, bool alarm) {
  m_headline->setText(headline);
  m_headline->setStyleSheet(alarm ? QStringLiteral("background: #fdecea; color: #8b1a10; "
                                                   "padding: 6px; font-weight: bold")
                                  : QStringLiteral("padding: 6px"));
  const bool verdictInHeadline = !report.verdict.empty() && headline.contains(QString::fromStdString(report.verdict));
  m_verdict->setText(QString::fromStdString(report.verdict));
  m_verdict->setVisible(!report.verdict.empty() && !verdictInHeadline);
  setGrid(report);
  QStringList lines;
  for (const auto& f : report.findings) {
    // The verdict is said once: above the grid, or in the headline when it carries it.
    if (f == report.verdict) continue;
    lines << QStringLiteral("• ") + QString::fromStdString(f).toHtmlEscaped();
  }
  m_findings->setText(lines.join(QStringLiteral("<br>")));
  setTable(report);
  m_stacks = report.stacks;
  m_runStartNs = report.start_ns;
  // No rank sent a stack (a run that never stalled): the table has the width.
  m_stackPanel->setVisible(!m_stacks.empty());
  for (int rank : {m_shownRank, rankToShowFirst(report)}) {
    for (int r = 0; r < m_table->rowCount() && m_table->selectedItems().isEmpty(); ++r)
      if (m_table->item(r, 0)->data(Qt::DisplayRole).toInt() == rank) m_table->selectRow(r);
  }
  showStackOfSelectedRank();
}

void HangView::setTable(const probes::HangReport& report) {
  // Filled unsorted (rows would move under the loop), then sorted as the user last chose;
  // the selection (whose stack is shown) is set again after.
  const QSignalBlocker quiet(m_table);
  m_table->setSortingEnabled(false);
  m_table->setRowCount(static_cast<int>(report.ranks.size()));
  int row = 0;
  for (const auto& st : report.ranks) {
    QString blocked = QStringLiteral("–");
    if (st.blocked_in) {
      blocked = tr("%1 #%2").arg(QString::fromStdString(st.blocked_in->op)).arg(st.blocked_in->seq);
      if (report.ages_known)  // a dump's wait has no known length: not "for 0.0 s"
        blocked += tr(" for %1 s").arg((report.now_ns - st.blocked_in->started_ns) / 1e9, 0, 'f', 1);
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
    // Where the rank's own code stood at its latest stack capture (PyTorch ranks), the whole
    // stack in the tooltip; "(earlier)" when the rank recorded events after it.
    QString code = QStringLiteral("–"), stack;
    for (const auto& capture : report.stacks) {
      if (capture.rank != st.rank || capture.threads.empty()) continue;
      const std::string where = probes::code_position(capture.threads.front());
      code = where.empty() ? tr("(only libraries' frames)") : QString::fromStdString(where);
      if (!probes::stack_is_current(report, capture)) code += tr(" (earlier)");
      stack = QString::fromStdString(probes::stack_text(capture, true, report.start_ns));
    }
    // A run with no iterations (flight-recorder dumps imported) has no step to be in.
    const bool steps = st.current_iteration > 0 || st.completed_iterations > 0;
    QStringList cells(8);
    cells[Rank] = QString::number(st.rank);
    cells[Iteration] = steps ? QString::number(st.current_iteration) : QStringLiteral("–");
    cells[Phase] = steps ? QString::fromUtf8(probes::hang_phase_words(st.phase)) : QStringLiteral("–");
    cells[BlockedIn] = blocked;
    cells[WaitingForAllreduce] = bucketCount(st.buckets_waiting_for_allreduce);
    cells[GradientsNotArrived] = missingText;
    cells[WaitingForGradients] = bucketCount(st.buckets_waiting_for_grads);
    cells[Code] = code;
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(cells[c]);  // the whole text where the column cuts it
      // Rank and iteration sort as numbers.
      if (c == Rank) item->setData(Qt::DisplayRole, st.rank);
      if (c == Iteration && steps) item->setData(Qt::DisplayRole, QVariant::fromValue<qlonglong>(st.current_iteration));
      if (c == Code) item->setToolTip(stack);
      if (c == GradientsNotArrived) item->setToolTip(missing.join(QStringLiteral("\n")));
      if (st.blocked_in && c == BlockedIn) item->setBackground(QColor(0xfd, 0xec, 0xea));
      m_table->setItem(row, c, item);
    }
    ++row;
  }
  m_table->setSortingEnabled(true);
  m_table->resizeColumnsToContents();
}

// The culprit's stack first, else the first rank that sent one.
int HangView::rankToShowFirst(const probes::HangReport& report) const {
  for (int culprit : report.culprits)
    for (const auto& c : report.stacks)
      if (c.rank == culprit) return culprit;
  return report.stacks.empty() ? -1 : report.stacks.front().rank;
}

void HangView::showStackOfSelectedRank() {
  const QList<QTableWidgetItem*> selected = m_table->selectedItems();
  if (selected.isEmpty()) {
    m_stackPanel->setStack(-1, std::nullopt, m_runStartNs);
    return;
  }
  const int rank = m_table->item(selected.front()->row(), 0)->data(Qt::DisplayRole).toInt();
  m_shownRank = rank;
  std::optional<probes::StackCapture> capture;
  for (const auto& c : m_stacks)
    if (c.rank == rank) capture = c;
  m_stackPanel->setStack(rank, capture, m_runStartNs);
}

void HangView::setGrid(const probes::HangReport& report) {
  const probes::GroupFinding* finding = nullptr;
  for (const auto& g : report.flight.groups)
    if (!g.verdict.empty()) {
      finding = &g;
      break;
    }
  m_grid->setVisible(finding != nullptr);
  m_gridTitle->setVisible(finding != nullptr);
  if (!finding) {
    m_grid->clear();
    return;
  }
  const probes::FlightGrid grid = probes::flight_grid(report.records, *finding);
  // The latest time any record knows: where a collective still running is drawn to.
  int64_t latest = 0;
  for (const auto& [rank, rows] : report.records.by_rank)
    for (const auto& r : rows)
      latest = std::max({latest, r.t_created_ns, r.t_started_ns, r.t_completed_ns});
  m_gridTitle->setText(
      tr("Group '%1', collectives #%2 to #%3 (flight recorder; the first mismatch marked ▶). "
         "<span style='background:#d8efd8'>&nbsp;completed&nbsp;</span> "
         "<span style='background:#ffd88a'>&nbsp;started&nbsp;</span> "
         "<span style='background:#d6e4f5'>&nbsp;scheduled&nbsp;</span> "
         "<span style='background:#eeeeee'>&nbsp;not called&nbsp;</span> · click a cell for the timeline")
          .arg(QString::fromStdString(grid.group).toHtmlEscaped())
          .arg(grid.seqs.empty() ? 0 : grid.seqs.front())
          .arg(grid.seqs.empty() ? 0 : grid.seqs.back()));
  m_grid->setSortingEnabled(false);  // filled in rank order, then sortable by a header click
  m_grid->clear();
  m_grid->setRowCount(static_cast<int>(grid.ranks.size()));
  m_grid->setColumnCount(static_cast<int>(grid.seqs.size()));
  QStringList columns, rows;
  for (int64_t s : grid.seqs)
    columns << (s == grid.focus_seq ? QStringLiteral("▶ #%1") : QStringLiteral("#%1")).arg(s);
  for (int r : grid.ranks)
    rows << tr("rank %1").arg(r);
  m_grid->setHorizontalHeaderLabels(columns);
  m_grid->setVerticalHeaderLabels(rows);
  for (size_t i = 0; i < grid.ranks.size(); ++i) {
    for (size_t j = 0; j < grid.seqs.size(); ++j) {
      const probes::CollectiveRow* c = grid.cell(i, j);
      auto* item = new QTableWidgetItem(c ? QString::fromStdString(probes::call_text(*c)) : QStringLiteral("–"));
      item->setBackground(stateColor(c ? c->state_order() : -1));
      item->setForeground(QColor(0x20, 0x20, 0x20));
      if (grid.seqs[j] == grid.focus_seq) {
        QFont bold = item->font();
        bold.setBold(true);
        item->setFont(bold);
      }
      if (c) {
        item->setToolTip(cellTip(*c));
        const int64_t begin = c->t_started_ns > 0 ? c->t_started_ns : c->t_created_ns;
        const int64_t end = c->t_completed_ns > 0 ? c->t_completed_ns : std::max(latest, begin);
        item->setData(Qt::UserRole, c->rank);
        item->setData(Qt::UserRole + 1, QVariant::fromValue<qlonglong>(begin));
        item->setData(Qt::UserRole + 2, QVariant::fromValue<qlonglong>(end));
      } else {
        item->setToolTip(
            tr("rank %1 has no record of #%2: never called (or no longer held)").arg(grid.ranks[i]).arg(grid.seqs[j]));
      }
      m_grid->setItem(static_cast<int>(i), static_cast<int>(j), item);
    }
  }
  m_grid->setSortingEnabled(true);
  m_grid->resizeColumnsToContents();
  // Tall enough for every rank up to 8 rows, then it scrolls.
  const int shown = std::min<int>(static_cast<int>(grid.ranks.size()), 8);
  m_grid->setFixedHeight(m_grid->horizontalHeader()->height() + shown * m_grid->verticalHeader()->defaultSectionSize() +
                         2 * m_grid->frameWidth() + 2);
}

QString HangView::verdict() const { return m_verdict->text(); }
QString HangView::headline() const { return m_headline->text(); }
QString HangView::findings() const { return m_findings->text(); }

// What the run says of where its ranks stand, headed by the verdict: the culprit first (who
// never arrived, or died), then who reported it, in the same words as `ddpscope-cli hang`.
void HangView::showRun(const ShownRun& shown) {
  const RunData& run = *shown.run;
  const bool stalled = shown.stalled;
  const auto& report = run.hang;
  QString headline;
  bool alarm = false;
  if (stalled) {
    headline = tr("No progress for %1 s: the job looks hung. %2Where each rank stands:")
                   .arg((report.now_ns - report.latest_event_ns) / 1e9, 0, 'f', 0)
                   .arg(report.verdict.empty() ? QString() : QString::fromStdString(report.verdict) + QLatin1Char(' '));
    alarm = true;
  } else if (run.run.status == "failed" && !report.verdict.empty()) {
    headline = tr("%1 Where each rank stood at the end:").arg(QString::fromStdString(report.verdict));
    alarm = true;
  } else if (run.run.status == "failed") {
    headline = tr("The run failed%1: %2. Where each rank stood at the end:")
                   .arg(run.run.failed_rank >= 0 ? tr(" on rank %1").arg(run.run.failed_rank) : QString(),
                        QString::fromStdString(run.run.message));
    alarm = true;
  } else if (shown.followingJob) {
    headline = tr("The job is making progress. Each rank's latest position:");
  } else {
    headline = tr("Run %1. Where each rank stood at its last event:").arg(QString::fromStdString(run.run.status));
  }
  // A job that stalled and went on is not hung now, but the stall is the answer to "why was
  // it slow": said here too, in the words of the verdict (slow_cause.h).
  if (!stalled && !run.cause.stalls.empty()) {
    QStringList said;
    for (const probes::SlowStall& st : run.cause.stalls)
      said << QString::fromStdString(probes::slow_stall_sentence(st));
    headline = tr("Nothing is pending now, but the job stalled: %1 %2").arg(said.join(QLatin1Char(' ')), headline);
  }
  setReport(report, headline, alarm);
  setAskable(run.run.status == "running");
}

std::optional<QString> HangView::whyEmpty(const RunData* run) const { return run ? QString() : noRunOpen(); }

}  // namespace ddpscope::gui
