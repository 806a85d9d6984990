#include "compare_page.h"
#include "slow_cause_text.h"

#include <QFileInfo>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "kind_colors.h"
#include "run_data.h"
#include "sort_proxy.h"
#include "sortable_table.h"
#include "time_breakdown_page.h"
#include "timeline_view.h"
#include "plural.h"

namespace ddpscope::gui {
namespace {

QString msText(double ms) { return QString::number(ms, 'f', 3); }

QColor changeColor(probes::OpChange::Change c) {
  switch (c) {
    case probes::OpChange::Change::Appeared: return {0xe1, 0x57, 0x59};
    case probes::OpChange::Change::Slower: return {0xd6, 0x27, 0x28};
    case probes::OpChange::Change::Faster:
    case probes::OpChange::Change::Disappeared: return {0x2c, 0x8c, 0x3c};
    case probes::OpChange::Change::Same: break;
  }
  return {0x80, 0x80, 0x80};
}

TimeBreakdown barOf(const probes::CompareSide& s, int row) {
  TimeBreakdown b;
  b.rank = row;
  b.iteration = -1;
  b.iterations = s.iterations;
  b.iteration_ms = s.iteration_ms;
  b.forward_ms = s.forward_ms;
  b.backward_ms = s.backward_ms;
  b.exposed_comm_ms = s.exposed_comm_ms;
  b.exposed_wait_ms = s.exposed_wait_ms;
  b.wait_iterations = s.iterations;
  b.optimizer_ms = s.optimizer_ms;
  b.idle_ms = s.idle_ms;
  b.hidden_comm_ms = s.hidden_comm_ms;
  b.gpu = s.gpu;  // the bars split the GPU's time (time_breakdown.h)
  b.computation_ms = s.gpu_computation_ms;
  return b;
}

QString sideText(const char* which, const probes::CompareSide& s) {
  return QObject::tr("<b>%1</b> %2: %3, iterations %4-%5")
      .arg(which, QFileInfo(QString::fromStdString(s.path)).fileName().toHtmlEscaped())
      .arg(countOf(s.ranks, QObject::tr("rank")))
      .arg(s.first_iteration)
      .arg(s.last_iteration);
}

// A timeline's height at the least: a rank's compute lane and comm lane, about 6 rows.
constexpr int kTimelineMinHeight = 200;

QWidget* scrolled(QWidget* view, int minimumHeight) {
  auto* scroll = new QScrollArea;
  scroll->setWidget(view);
  scroll->setWidgetResizable(true);
  scroll->setMinimumHeight(minimumHeight);
  return scroll;
}

}  // namespace

ComparePage::ComparePage(QWidget* parent) : QWidget(parent) {
  // The page scrolls when the window is short: each timeline keeps room for several rows
  // (at 1024x700 the headline and bars left them about 3 rows each).
  auto* content = new QWidget;
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* page = new QScrollArea;
  page->setWidget(content);
  page->setWidgetResizable(true);
  page->setFrameShape(QFrame::NoFrame);
  outer->addWidget(page);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(6, 6, 6, 6);
  // How the runs' settings differ, above the headline that times them.
  m_settings = new QLabel;
  m_settings->setObjectName(QStringLiteral("compareSettings"));
  m_settings->setWordWrap(true);
  m_settings->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_settings->setVisible(false);
  layout->addWidget(m_settings);
  m_headline = new QLabel;
  m_headline->setObjectName(QStringLiteral("compareHeadline"));
  m_headline->setWordWrap(true);
  m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_headline);

  // The bars over their whole width (one scale for both runs), the ops, the timelines.
  m_bars = new BreakdownBars;
  m_bars->setMinimumHeight(m_bars->sizeHint().height());
  layout->addWidget(m_bars);
  auto* splitter = new QSplitter(Qt::Vertical);
  m_ops = new QStandardItemModel(this);
  m_ops->setHorizontalHeaderLabels({tr("change"), tr("kind"), tr("name"), tr("A (ms)"), tr("B (ms)"), tr("B - A (ms)"),
                                    tr("calls A"), tr("calls B")});
  m_opsTable = makeSortableTable(m_ops);
  m_opsTable->setToolTip(tr("Each op's total time and calls per rank and iteration, the largest change first"));
  m_opsTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_opsTable->setMinimumHeight(120);  // its header and three ops, the page scrolling if need be
  splitter->addWidget(m_opsTable);

  auto* timelines = new QWidget;
  auto* tl = new QVBoxLayout(timelines);
  tl->setContentsMargins(0, 0, 0, 0);
  m_labelA = new QLabel;
  m_labelB = new QLabel;
  m_timelineA = new TimelineView;
  m_timelineB = new TimelineView;
  tl->addWidget(m_labelA);
  tl->addWidget(scrolled(m_timelineA, kTimelineMinHeight), 1);
  tl->addWidget(m_labelB);
  tl->addWidget(scrolled(m_timelineB, kTimelineMinHeight), 1);
  splitter->addWidget(timelines);
  splitter->setStretchFactor(0, 1);
  splitter->setStretchFactor(1, 3);
  layout->addWidget(splitter, 1);
}

QString ComparePage::headline() const { return QString::fromStdString(m_comparison.headline); }

QString ComparePage::settingsNote() const { return m_settings->isVisible() ? m_settings->text() : QString(); }

void ComparePage::showComparison(std::shared_ptr<const RunData> a, std::shared_ptr<const RunData> b,
                                 const probes::RunComparison& comparison) {
  m_a = std::move(a);
  m_b = std::move(b);
  m_comparison = comparison;
  // Each run's verdict under the headline: who the job waited for in A and in B, and why.
  QString text = QString::fromStdString(m_comparison.headline).toHtmlEscaped();
  if (m_a && m_b)
    text += QStringLiteral("<br><b>%1</b> %2<br><b>%3</b> %4")
                .arg(tr("Why, A:"), QString::fromStdString(probes::slow_cause_verdict(m_a->cause)).toHtmlEscaped(),
                     tr("Why, B:"), QString::fromStdString(probes::slow_cause_verdict(m_b->cause)).toHtmlEscaped());
  m_headline->setText(text);
  const QString settings = QString::fromStdString(m_comparison.settings_text()).toHtmlEscaped();
  // More than one difference: a warning, so the headline's blame is read with it.
  m_settings->setText(m_comparison.settings.size() > 1 ? QStringLiteral("⚠ <b>%1</b>").arg(settings) : settings);
  m_settings->setVisible(!settings.isEmpty());
  m_bars->setRows({barOf(m_comparison.a, 0), barOf(m_comparison.b, 1)}, -1);
  m_bars->setMinimumHeight(m_bars->sizeHint().height());
  m_bars->setRowLabels({tr("A · %1").arg(QFileInfo(QString::fromStdString(m_comparison.a.path)).fileName()),
                        tr("B · %1").arg(QFileInfo(QString::fromStdString(m_comparison.b.path)).fileName())});
  fillOps();
  m_labelA->setText(sideText("A", m_comparison.a));
  m_labelB->setText(sideText("B", m_comparison.b));
  // The timelines share the data the runs hold (never copied), each shown from its
  // first compared iteration over the longer of the two iterations.
  m_timelineA->setData(std::shared_ptr<const TimelineData>(m_a, &m_a->timeline));
  m_timelineB->setData(std::shared_ptr<const TimelineData>(m_b, &m_b->timeline));
  const auto span = static_cast<int64_t>(std::max(m_comparison.a.iteration_ms, m_comparison.b.iteration_ms) * 1.1e6);
  const int64_t a0 = m_comparison.a.first_iteration_begin_ns, b0 = m_comparison.b.first_iteration_begin_ns;
  disconnect(m_timelineA, &TimelineView::windowChanged, this, nullptr);
  disconnect(m_timelineB, &TimelineView::windowChanged, this, nullptr);
  m_timelineA->showWindow(a0 - span / 20, a0 + span);
  m_timelineB->showWindow(b0 - span / 20, b0 + span);
  connect(m_timelineA, &TimelineView::windowChanged, this,
          [this, a0, b0] { follow(m_timelineA, m_timelineB, a0, b0); });
  connect(m_timelineB, &TimelineView::windowChanged, this,
          [this, a0, b0] { follow(m_timelineB, m_timelineA, b0, a0); });
}

void ComparePage::follow(TimelineView* from, TimelineView* to, int64_t fromOrigin, int64_t toOrigin) {
  if (m_following) return;
  m_following = true;
  to->showWindow(from->axis().begin_ns - fromOrigin + toOrigin, from->axis().end_ns - fromOrigin + toOrigin);
  m_following = false;
}

void ComparePage::fillOps() {
  m_ops->removeRows(0, m_ops->rowCount());
  for (const probes::OpChange& op : m_comparison.ops) {
    QList<QStandardItem*> row;
    const QString change = QString::fromLatin1(probes::change_name(op.change));
    row << sortableCell(change, change) << sortableCell(kindLabel(op.kind), kindLabel(op.kind))
        << sortableCell(QString::fromStdString(op.name), QString::fromStdString(op.name))
        << sortableCell(msText(op.a_ms), op.a_ms) << sortableCell(msText(op.b_ms), op.b_ms)
        << sortableCell((op.delta_ms() > 0 ? "+" : "") + msText(op.delta_ms()), op.delta_ms())
        << sortableCell(QString::number(op.a_count, 'f', 1), op.a_count)
        << sortableCell(QString::number(op.b_count, 'f', 1), op.b_count);
    row[0]->setForeground(changeColor(op.change));
    row[1]->setData(kindColor(op.kind), Qt::DecorationRole);
    m_ops->appendRow(row);
  }
}

}  // namespace ddpscope::gui
