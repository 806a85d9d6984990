#include "run_list_panel.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QResizeEvent>
#include <algorithm>

#include "run_list_model.h"
#include "run_session.h"
#include "sort_proxy.h"

namespace ddpscope::gui {

RunListPanel::RunListPanel(RunSession* session, QWidget* parent)
    : QTableView(parent), m_session(session), m_runs(new RunListModel(this)), m_proxy(new SortProxy(this)) {
  setObjectName(QStringLiteral("runs"));
  m_proxy->setSourceModel(m_runs);
  setModel(m_proxy);
  horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);  // newest first until a header is clicked
  setSortingEnabled(true);
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setSelectionMode(QAbstractItemView::SingleSelection);
  verticalHeader()->hide();
  // A fifth of a laptop's window: the run's name elided in the middle (its whole path in
  // the tooltip) so Status and Ranks stay in view.
  setMinimumWidth(160);
  setTextElideMode(Qt::ElideMiddle);
  setWordWrap(false);  // one line per run, elided in its middle (wrapped, its end was cut)
  horizontalHeader()->setStretchLastSection(false);
  horizontalHeader()->setMinimumSectionSize(40);
  horizontalHeader()->setSectionResizeMode(RunListModel::Name, QHeaderView::Stretch);
  for (int column = RunListModel::Status; column < RunListModel::NumColumns; ++column)
    horizontalHeader()->setSectionResizeMode(column, QHeaderView::ResizeToContents);
  // A run opens when the user selects its row (click, arrow keys). Not on the current row
  // changing: the view makes its first row current when it first gets focus, which
  // swapped the run the user had opened for another one.
  connect(selectionModel(), &QItemSelectionModel::selectionChanged, this, [this](const QItemSelection& selected) {
    if (selected.indexes().isEmpty()) return;
    const QString path = selected.indexes().first().data(RunListModel::PathRole).toString();
    const auto& run = m_session->run();
    if (!run || QString::fromStdString(run->path) != path) m_session->openRunInBackground(path);
  });
  // The list is re-read as runs come and go: keep the open run's row selected.
  connect(m_runs, &QAbstractItemModel::modelReset, this, [this] {
    if (m_session->run()) select(QString::fromStdString(m_session->run()->path));
    updateVisibility();
    fitColumns();
  });
  connect(session, &RunSession::runOpened, this, &RunListPanel::select);
  connect(session, &RunSession::runChanged, this, [this](bool live) {
    // A followed job's run, listed from its first load on, not only once the job ends
    // (once: reloads come 4 a second, and the list's selection does not change between them).
    const QString path = QString::fromStdString(m_session->run()->path);
    if (live && path != m_selected) select(path);
  });
  // A failed open: the list shows what is open.
  connect(session, &RunSession::failed, this, [this] {
    if (m_session->run()) select(QString::fromStdString(m_session->run()->path));
  });
  m_runs->setFolder(session->workspace());
}

void RunListPanel::setWanted(bool wanted) {
  m_wanted = wanted;
  updateVisibility();
}

void RunListPanel::setAskedFor(bool askedFor) {
  m_askedFor = askedFor;
  updateVisibility();
}

void RunListPanel::resizeEvent(QResizeEvent* event) {
  QTableView::resizeEvent(event);
  fitColumns();
}

// Name, Status and Ranks always; then Model, Started and Duration while the name keeps the
// width of the longest (up to 200 px). At 1280x800 the list's fifth of the window showed
// Run, Status and Ranks and a scroll bar to reach the other three.
void RunListPanel::fitColumns() {
  QHeaderView* header = horizontalHeader();
  const auto width_of = [&](int column) {
    return std::max(sizeHintForColumn(column), header->sectionSizeHint(column));
  };
  int used = std::min(width_of(RunListModel::Name), 200);
  for (int column : {RunListModel::Status, RunListModel::WorldSize})
    used += width_of(column);
  const int room = viewport()->width();
  bool fits = true;
  for (int column : {RunListModel::Model, RunListModel::Started, RunListModel::Duration}) {
    used += width_of(column);
    fits = fits && used <= room;
    setColumnHidden(column, !fits);
  }
}

// An empty workspace's list took a quarter of the window for nothing.
void RunListPanel::updateVisibility() { setVisible(m_wanted && (m_runs->rowCount() > 0 || m_askedFor)); }

void RunListPanel::select(const QString& path) {
  m_selected = path;
  const QString wanted = QFileInfo(path).absoluteFilePath();
  bool listed = false;
  for (int row = 0; row < m_runs->rowCount() && !listed; ++row)
    listed = QFileInfo(m_runs->index(row, 0).data(RunListModel::PathRole).toString()).absoluteFilePath() == wanted;
  // Not listed: from outside the workspace, or new in it since the list was read.
  if (!listed && !m_rereading && QFileInfo(QFileInfo(path).absolutePath()) == QFileInfo(m_runs->folder())) {
    m_rereading = true;  // once: a file the list does not take (not *.ddprun) must not loop
    m_runs->refresh();   // its modelReset comes back here and selects the row
    m_rereading = false;
    return;
  }
  if (!listed) m_runs->addOutside(path);
  const QSignalBlocker block(selectionModel());
  for (int row = 0; row < m_runs->rowCount(); ++row) {
    const QModelIndex index = m_runs->index(row, 0);
    if (QFileInfo(index.data(RunListModel::PathRole).toString()).absoluteFilePath() == wanted) {
      selectionModel()->setCurrentIndex(m_proxy->mapFromSource(index),
                                        QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
      viewport()->update();
      return;
    }
  }
  selectionModel()->clearSelection();
}

}  // namespace ddpscope::gui
