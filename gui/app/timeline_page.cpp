#include "timeline_page.h"

#include <algorithm>
#include <QAction>
#include <QClipboard>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QShortcut>
#include <QSortFilterProxyModel>
#include <QtConcurrent/QtConcurrentRun>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <functional>

#include "kind_colors.h"
#include "sort_proxy.h"
#include "range_summary.h"
#include "plural.h"
#include "span_details.h"
#include "span_record.h"
#include "time_format.h"
#include "timeline_detail_loader.h"
#include "timeline_view.h"

namespace ddpscope::gui {
namespace {

constexpr int kRefRole = Qt::UserRole + 1;  // "lane,index,in" of a span an item names

// Enter finds the next match, Shift+Enter the previous, Esc closes the bar.
class SearchField : public QLineEdit {
 public:
  using QLineEdit::QLineEdit;
  std::function<void(bool)> onEnter;
  std::function<void()> onEscape;

 protected:
  void keyPressEvent(QKeyEvent* e) override {
    if (e->key() == Qt::Key_Return || e->key() == Qt::Key_Enter) {
      if (onEnter) onEnter(e->modifiers() & Qt::ShiftModifier);
      return;
    }
    if (e->key() == Qt::Key_Escape) {
      if (onEscape) onEscape();
      return;
    }
    QLineEdit::keyPressEvent(e);
  }
};

}  // namespace

TimelinePage::TimelinePage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  layout->addWidget(buildSearchBar());
  m_legend = new QLabel;
  m_legend->setWordWrap(true);
  m_legend->setContentsMargins(6, 0, 6, 0);
  layout->addWidget(m_legend);

  m_detailNote = new QLabel;
  m_detailNote->setWordWrap(true);
  m_detailNote->setContentsMargins(6, 0, 6, 0);
  m_detailNote->hide();
  layout->addWidget(m_detailNote);

  auto* splitter = new QSplitter(Qt::Vertical);
  m_view = new TimelineView;
  m_detailLoader = new TimelineDetailLoader(m_view, this);
  connect(m_detailLoader, &TimelineDetailLoader::statusChanged, this, [this](const QString& status) {
    m_detailNote->setText(status);
    m_detailNote->setVisible(!status.isEmpty());
  });
  auto* scroll = new QScrollArea;
  scroll->setWidget(m_view);
  scroll->setWidgetResizable(true);
  splitter->addWidget(scroll);
  // A found or selected span on a lane below the fold: scroll to it.
  connect(m_view, &TimelineView::revealRequested, scroll, [scroll](int y) { scroll->ensureVisible(0, y, 0, 60); });
  m_panels = new QTabWidget;
  m_panels->addTab(buildDetailsPanel(), tr("Details"));
  m_panels->addTab(buildRangePanel(), tr("Range"));
  splitter->addWidget(m_panels);
  // The tracks get most of the height; the panel a strip that the user can drag up.
  splitter->setStretchFactor(0, 4);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({700, 260});
  layout->addWidget(splitter, 1);
  connectSignals();
  showDetails();
}

QWidget* TimelinePage::buildSearchBar() {
  m_searchBar = new QWidget;
  auto* bar = new QHBoxLayout(m_searchBar);
  bar->setContentsMargins(6, 2, 6, 2);
  auto* field = new SearchField;
  m_search = field;
  m_search->setPlaceholderText(tr("Find spans, marks, 'bucket 3' or a parameter (Enter: next, Shift+Enter: previous)"));
  m_search->setClearButtonEnabled(true);
  auto* previous = new QPushButton(tr("Previous"));
  auto* next = new QPushButton(tr("Next"));
  m_searchStatus = new QLabel;
  auto* close = new QToolButton;
  close->setText(QStringLiteral("✕"));
  close->setToolTip(tr("Close the search bar (Esc)"));
  bar->addWidget(new QLabel(tr("Find")));
  bar->addWidget(m_search, 1);
  bar->addWidget(previous);
  bar->addWidget(next);
  bar->addWidget(m_searchStatus);
  bar->addWidget(close);
  m_searchBar->hide();
  field->onEnter = [this](bool back) { back ? findPrevious() : findNext(); };
  field->onEscape = [this] {
    m_searchBar->hide();
    m_view->setFocus();
  };
  connect(next, &QPushButton::clicked, this, &TimelinePage::findNext);
  connect(previous, &QPushButton::clicked, this, &TimelinePage::findPrevious);
  connect(close, &QToolButton::clicked, this, [this] { m_searchBar->hide(); });

  return m_searchBar;
}

QWidget* TimelinePage::buildDetailsPanel() {
  m_details = new QTreeWidget;
  m_details->setColumnCount(2);
  m_details->setHeaderLabels({tr("Field"), tr("Value")});
  m_details->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  // Sortable by a click on a column's header (in reading order until then), and copied
  // with Ctrl+C or the context menu: the selected rows, or all of them.
  m_details->setSortingEnabled(true);
  m_details->sortByColumn(-1, Qt::AscendingOrder);
  m_details->setSelectionMode(QAbstractItemView::ExtendedSelection);
  m_details->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto* copy = new QAction(tr("&Copy"), m_details);
  copy->setShortcut(QKeySequence::Copy);
  copy->setShortcutContext(Qt::WidgetShortcut);
  connect(copy, &QAction::triggered, this, &TimelinePage::copyDetails);
  auto* copyAll = new QAction(tr("Copy &all"), m_details);
  connect(copyAll, &QAction::triggered, this, [this] {
    m_details->clearSelection();
    copyDetails();
  });
  m_details->addAction(copy);
  m_details->addAction(copyAll);
  return m_details;
}

QString TimelinePage::detailsText() const {
  QStringList lines;
  const bool all = m_details->selectedItems().isEmpty();
  const std::function<void(QTreeWidgetItem*, int)> add = [&](QTreeWidgetItem* item, int depth) {
    if (all || item->isSelected())
      lines << QString(depth * 2, QLatin1Char(' ')) + item->text(0) + QLatin1Char('\t') + item->text(1);
    for (int i = 0; i < item->childCount(); ++i)
      add(item->child(i), depth + 1);
  };
  for (int i = 0; i < m_details->topLevelItemCount(); ++i)
    add(m_details->topLevelItem(i), 0);
  return lines.join(QLatin1Char('\n'));
}

void TimelinePage::copyDetails() const { QGuiApplication::clipboard()->setText(detailsText()); }

// A dragged time range's spans summed by name and kind.
QWidget* TimelinePage::buildRangePanel() {
  auto* rangePage = new QWidget;
  auto* rangeLayout = new QVBoxLayout(rangePage);
  rangeLayout->setContentsMargins(4, 4, 4, 4);
  m_rangeHeader =
      new QLabel(tr("Drag across the timeline to select a time range: its time is summed here "
                    "by name and kind, with the longest of each (activate a row to select it). Shift+drag pans."));
  m_rangeHeader->setWordWrap(true);
  m_rangeModel = new QStandardItemModel(0, 6, this);
  m_rangeModel->setHorizontalHeaderLabels(
      {tr("Name"), tr("Kind"), tr("Spans"), tr("Ranks"), tr("Time in range"), tr("Longest")});
  auto* proxy = new SortProxy(this);
  proxy->setSourceModel(m_rangeModel);
  proxy->setSortRole(kSortRole);
  m_rangeTable = new QTableView;
  m_rangeTable->setModel(proxy);
  m_rangeTable->setSortingEnabled(true);
  m_rangeTable->sortByColumn(4, Qt::DescendingOrder);
  // One line a row, columns as wide as their words ("process-group op" wrapped and was cut),
  // but the name's: it gets the room the numbers leave. As wide as a GPU kernel's name (900
  // px) it pushed Time in range and Longest off a laptop's screen; a long name is elided in
  // its middle, whole in its tooltip.
  m_rangeTable->setWordWrap(false);
  m_rangeTable->setTextElideMode(Qt::ElideMiddle);
  m_rangeTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_rangeTable->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  m_rangeTable->verticalHeader()->hide();
  m_rangeTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  connect(m_rangeTable, &QTableView::activated, this, [this, proxy](const QModelIndex& index) {
    const QModelIndex name = m_rangeModel->index(proxy->mapToSource(index).row(), 0);
    const QStringList ref = name.data(kRefRole).toString().split(',');
    if (ref.size() == 3)
      m_view->select({ref[0].toInt(), ref[1].toLongLong(), static_cast<SpanRef::In>(ref[2].toInt())}, true);
  });
  rangeLayout->addWidget(m_rangeHeader);
  rangeLayout->addWidget(m_rangeTable, 1);
  return rangePage;
}

void TimelinePage::connectSignals() {
  connect(&m_searchWatcher, &QFutureWatcher<SearchResults>::finished, this, [this] {
    SearchResults found = m_searchWatcher.result();
    // Typed on: the next Enter searches for the new text. New data meanwhile (a window's
    // detail came in): its matches index other spans, so the search runs again.
    if (m_searching != m_search->text().toStdString()) return;
    if (m_searchGeneration != m_dataGeneration) {
      searchThenShow(m_searchForward);
      return;
    }
    m_searched = m_searching;
    m_results = std::move(found);
    m_current = -1;
    showFirstFrom(m_searchForward);
  });
  connect(m_view, &TimelineView::selectionChanged, this, &TimelinePage::showDetails);
  connect(m_view, &TimelineView::rangeChanged, this, &TimelinePage::showRange);
  connect(m_view, &TimelineView::searchRequested, this, &TimelinePage::showSearch);
  connect(m_view, &TimelineView::dataReplaced, this, [this] {
    // Matches index the old data: the next Enter searches again, from the view.
    ++m_dataGeneration;
    m_results = {};
    m_searched.clear();
    m_current = -1;
    refreshLegend();
  });
  connect(m_details, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QStringList ref = item->data(0, kRefRole).toString().split(',');
    if (ref.size() != 3) return;
    m_view->select({ref[0].toInt(), ref[1].toLongLong(), static_cast<SpanRef::In>(ref[2].toInt())}, true);
  });
  connect(m_details, &QTreeWidget::itemClicked, m_details, &QTreeWidget::itemActivated);
  // Ctrl+F anywhere on the page ('/' only on the tracks: it is typed into fields).
  auto* find = new QShortcut(QKeySequence::Find, this);
  find->setContext(Qt::WidgetWithChildrenShortcut);
  connect(find, &QShortcut::activated, this, &TimelinePage::showSearch);
}

void TimelinePage::refreshLegend() {
  const TimelineData& data = m_view->data();
  QStringList items;
  for (int k = 0; k < probes::kNumKinds; ++k) {
    const auto kind = static_cast<probes::Kind>(k);
    if (!(data.kinds_present & (uint64_t{1} << k)) || !kindIsSpan(kind)) continue;
    items << QStringLiteral("<span style='color:%1'>■</span>&nbsp;%2").arg(kindColor(kind).name(), kindLabel(kind));
  }
  items << QStringLiteral("<span style='color:#d62728'>▁</span>&nbsp;%1").arg(tr("exposed communication"));
  items << QStringLiteral("<span style='color:#c62828'>│</span>&nbsp;%1").arg(tr("mark"));
  // The lines between tracks, as drawn by TimelineView::paintFlows.
  const auto hasFlow = [&](TimelineFlow::Kind k) { return data.flow_kinds_present & (1u << static_cast<unsigned>(k)); };
  if (hasFlow(TimelineFlow::Kind::Collective))
    items << QStringLiteral("<span style='color:#2c8c3c'>╌</span>&nbsp;%1").arg(tr("one collective across ranks"));
  if (hasFlow(TimelineFlow::Kind::Message))
    items << QStringLiteral("<span style='color:#4c78a8'>→</span>&nbsp;%1").arg(tr("RPC message, send to receive"));
  if (hasFlow(TimelineFlow::Kind::Launch))
    items << QStringLiteral("<span style='color:#7b6fc9'>─</span>&nbsp;%1").arg(tr("kernel launch to its GPU work"));
  bool open = false;
  for (const auto& lane : data.lanes)
    open = open || !lane.open.empty();
  if (open) items << QStringLiteral("<span style='color:#c62828'>▨</span>&nbsp;%1").arg(tr("never finished"));
  // Noted as spans are read: a live run's legend refreshes without a pass over them all.
  if (data.cut_short_present)
    items << QStringLiteral("<span style='color:#c62828'>▨▌</span>&nbsp;%1").arg(tr("cut short by an error"));
  m_legend->setText(items.join(QStringLiteral(" &nbsp; ")));
}

QTreeWidgetItem* TimelinePage::refItem(const QString& label, int lane, int64_t index, int in) {
  auto* item = new QTreeWidgetItem(
      {label, QString::fromStdString(spanTitle(m_view->data(), {lane, index, static_cast<SpanRef::In>(in)}))});
  item->setData(0, kRefRole, QStringLiteral("%1,%2,%3").arg(lane).arg(index).arg(in));
  item->setToolTip(1, tr("Click to select it"));
  item->setForeground(1, palette().color(QPalette::Link));
  return item;
}

void TimelinePage::showDetails() {
  m_details->clear();
  const SpanDetails d = spanDetails(m_view->data(), m_view->selection());
  if (!d.ref.valid() && m_view->selectedFlow() >= 0) {
    showFlowDetails();
    return;
  }
  if (!d.ref.valid()) {
    auto* hint = new QTreeWidgetItem({tr("Nothing selected"), tr("Click a span or a mark to see its details here.")});
    m_details->addTopLevelItem(hint);
    return;
  }
  for (const auto& [label, value] : d.fields())
    m_details->addTopLevelItem(new QTreeWidgetItem({QString::fromStdString(label), QString::fromStdString(value)}));
  addRecordedFields(d.rowid);
  if (d.parent.valid())
    m_details->addTopLevelItem(refItem(tr("Parent"), d.parent.lane, d.parent.index, static_cast<int>(d.parent.in)));
  if (!d.children.empty()) {
    auto* children = new QTreeWidgetItem({tr("Children"), d.children_truncated ? tr("first %1").arg(d.children.size())
                                                                               : QString::number(d.children.size())});
    for (const SpanRef& c : d.children)
      children->addChild(refItem(QString(), c.lane, c.index, static_cast<int>(c.in)));
    m_details->addTopLevelItem(children);
    children->setExpanded(d.children.size() <= 12);
  }
  if (!d.same_collective.empty()) {
    auto* others = new QTreeWidgetItem({tr("On other ranks"), tr("the same op, sequence number %1").arg(d.seq)});
    for (const SpanRef& c : d.same_collective) {
      others->addChild(refItem(tr("rank %1").arg(m_view->data().lanes[static_cast<size_t>(c.lane)].rank), c.lane,
                               c.index, static_cast<int>(c.in)));
    }
    m_details->addTopLevelItem(others);
    others->setExpanded(true);
  }
  m_panels->setCurrentIndex(0);
}

// Everything the run file holds of the span: its row's columns and, for a span imported
// from a trace, every argument the trace gave it (grid, block, stream, input dims...).
void TimelinePage::addRecordedFields(int64_t rowid) {
  if (rowid <= 0 || m_runFile.empty()) return;
  const SpanRecord record = readSpanRecord(m_runFile, rowid);
  const auto group = [&](const QString& title, const QString& note,
                         const std::vector<std::pair<std::string, std::string>>& rows) {
    if (rows.empty()) return;
    auto* item = new QTreeWidgetItem({title, note});
    for (const auto& [key, value] : rows)
      item->addChild(new QTreeWidgetItem({QString::fromStdString(key), QString::fromStdString(value)}));
    m_details->addTopLevelItem(item);
    item->setExpanded(true);
  };
  if (!record.error.empty()) {
    m_details->addTopLevelItem(
        new QTreeWidgetItem({tr("Recorded"), tr("not read: %1").arg(QString::fromStdString(record.error))}));
    return;
  }
  group(tr("Arguments"), tr("%1, as the trace gave them").arg(countOf(record.arguments.size(), tr("argument"))),
        record.arguments);
  group(tr("Recorded"), tr("the run file's row, field by field"), record.fields);
}

// A message picked on the Messages tab: its ends, on the timeline's clock (time after
// the run's start), and what it was.
void TimelinePage::showFlowDetails() {
  const TimelineData& data = m_view->data();
  const TimelineFlow& f = data.flows[static_cast<size_t>(m_view->selectedFlow())];
  const auto end = [&](uint32_t lane, int64_t t) {
    return tr("rank %1 · %2, at %3")
        .arg(data.lanes[lane].rank)
        .arg(QString::fromStdString(data.lanes[lane].thread_name),
             QString::fromStdString(formatDuration(t - data.begin_ns)));
  };
  m_details->addTopLevelItem(new QTreeWidgetItem({tr("Selected"), tr("an RPC message (its line is ringed)")}));
  if (!m_flowNote.isEmpty()) m_details->addTopLevelItem(new QTreeWidgetItem({tr("Message"), m_flowNote}));
  m_details->addTopLevelItem(new QTreeWidgetItem({tr("Sent"), end(f.from_lane, f.from_ns)}));
  m_details->addTopLevelItem(new QTreeWidgetItem({tr("Received"), end(f.to_lane, f.to_ns)}));
  m_details->addTopLevelItem(new QTreeWidgetItem(
      {tr("On the way"), QString::fromStdString(formatDuration(std::max<int64_t>(0, f.to_ns - f.from_ns)))}));
  m_panels->setCurrentIndex(0);
}

void TimelinePage::showRange() {
  m_rangeModel->removeRows(0, m_rangeModel->rowCount());
  if (m_view->rangeEnd() <= m_view->rangeBegin()) return;
  const TimelineData& data = m_view->data();
  const RangeSummary sum = summarizeRange(data, m_view->rangeBegin(), m_view->rangeEnd());
  m_rangeHeader->setText(tr("Range %1 → %2 after the run's start: %3. Time inside it by name and kind, "
                            "every rank and thread.")
                             .arg(QString::fromStdString(formatDuration(sum.begin_ns - data.begin_ns)),
                                  QString::fromStdString(formatDuration(sum.end_ns - data.begin_ns)),
                                  QString::fromStdString(formatDuration(sum.end_ns - sum.begin_ns))));
  for (const RangeRow& r : sum.rows) {
    QList<QStandardItem*> row;
    auto cell = [&](const QString& text, const QVariant& sortKey) {
      auto* item = new QStandardItem(text);
      item->setData(sortKey, kSortRole);
      item->setEditable(false);
      row << item;
    };
    cell(QString::fromStdString(r.name), QString::fromStdString(r.name));
    row[0]->setToolTip(QString::fromStdString(r.name));
    cell(kindLabel(r.kind), kindLabel(r.kind));
    cell(QString::number(r.count), QVariant::fromValue<qlonglong>(r.count));
    cell(QString::number(r.ranks), r.ranks);
    cell(QString::fromStdString(formatDuration(r.total_ns)), QVariant::fromValue<qlonglong>(r.total_ns));
    cell(QString::fromStdString(formatDuration(r.longest_ns)), QVariant::fromValue<qlonglong>(r.longest_ns));
    row[1]->setData(kindColor(r.kind), Qt::DecorationRole);
    // Activating the row selects its longest span (as the details panel's links do).
    row[0]->setData(
        QStringLiteral("%1,%2,%3").arg(r.longest.lane).arg(r.longest.index).arg(static_cast<int>(r.longest.in)),
        kRefRole);
    row[5]->setToolTip(
        tr("The longest %1 in the range; activate the row to select it").arg(QString::fromStdString(r.name)));
    m_rangeModel->appendRow(row);
  }
  m_panels->setCurrentIndex(1);
}

void TimelinePage::showSearch() {
  m_searchBar->show();
  m_search->setFocus();
  m_search->selectAll();
}

void TimelinePage::runSearch() {
  m_searched = m_search->text().toStdString();
  m_results = searchTimeline(m_view->data(), m_searched);
  m_current = -1;
}

void TimelinePage::showFirstFrom(bool forward) {
  if (!forward) {
    showMatch(static_cast<int>(m_results.matches.size()) - 1);
    return;
  }
  // The first match at or after the left edge of the view.
  const TimelineData& data = m_view->data();
  int first = 0;
  while (first < static_cast<int>(m_results.matches.size()) &&
         data.resolve(m_results.matches[static_cast<size_t>(first)])->begin_ns < m_view->axis().begin_ns)
    ++first;
  showMatch(first < static_cast<int>(m_results.matches.size()) ? first : 0);
}

void TimelinePage::searchThenShow(bool forward) {
  int64_t spans = 0;
  for (const auto& lane : m_view->data().lanes)
    spans += static_cast<int64_t>(lane.spans.size() + lane.instants.size());
  if (spans <= m_searchInBackgroundAbove) {
    runSearch();
    showFirstFrom(forward);
    return;
  }
  m_searchForward = forward;
  const std::string query = m_search->text().toStdString();
  if (m_searchWatcher.isRunning() && query == m_searching && m_searchGeneration == m_dataGeneration) return;
  m_searching = query;
  m_searchGeneration = m_dataGeneration;
  m_searchStatus->setText(tr("searching %1 spans…").arg(spans));
  m_searchWatcher.setFuture(
      QtConcurrent::run([data = m_view->sharedData(), query] { return searchTimeline(*data, query); }));
}

void TimelinePage::findNext() {
  if (m_search->text().toStdString() != m_searched || m_results.matches.empty()) {
    searchThenShow(true);
    return;
  }
  showMatch((m_current + 1) % static_cast<int>(m_results.matches.size()));
}

void TimelinePage::findPrevious() {
  if (m_search->text().toStdString() != m_searched || m_results.matches.empty()) {
    searchThenShow(false);
    return;
  }
  const int n = static_cast<int>(m_results.matches.size());
  showMatch((m_current - 1 + n) % n);
}

void TimelinePage::showMatch(int index) {
  const int n = static_cast<int>(m_results.matches.size());
  // A big run holds the detail of one window: say that a name of the detail (an autograd
  // node) was searched for there alone.
  const TimelineData& data = m_view->data();
  const QString where = !data.has_detail || !data.detail_window.everything()
                            ? tr(" (autograd nodes and other detail: in the window loaded)")
                            : QString();
  if (index < 0 || index >= n) {
    m_current = -1;
    m_searchStatus->setText(m_searched.empty() ? QString() : tr("no match") + where);
    return;
  }
  m_current = index;
  m_view->select(m_results.matches[static_cast<size_t>(index)], true);
  m_searchStatus->setText(
      tr("%1 of %2%3").arg(index + 1).arg(n).arg(m_results.truncated ? QStringLiteral("+") : QString()) + where);
}

// Its detail loader forgets another run until the new one is shown.
void TimelinePage::releaseRun(bool sameRun) {
  if (!sameRun) m_detailLoader->setRun(nullptr);
}

// A run (or a live reload of the one shown: the view keeps its place) into the view, its
// detail loader and the legend. Shares the run's timeline: no copy of its spans.
void TimelinePage::showRun(const ShownRun& shown) {
  const std::shared_ptr<const RunData>& run = shown.run;
  std::shared_ptr<const TimelineData> timeline(run, &run->timeline);
  std::map<int, std::string> hosts;
  for (const auto& r : run->ranks)
    hosts[r.rank] = r.host;
  m_view->setHosts(std::move(hosts));
  if (shown.sameRun) {
    m_view->updateData(std::move(timeline));
  } else {
    m_view->setData(std::move(timeline));
    // The whole run, as a trace viewer opens: a user looks for where time went before
    // zooming in (F fits again; N and P step through iterations). A run too big to read
    // whole opens on its second iteration (past warm-up), whose detail loads.
    if (run->timeline.has_detail)
      m_view->fitAll();
    else
      m_view->showIteration(run->timeline.iterations.size() > 1 ? 1 : 0);
  }
  m_detailLoader->setRun(run);
  setRunFile(run->path);
  refreshLegend();
}

}  // namespace ddpscope::gui
