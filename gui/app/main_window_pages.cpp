// MainWindow: the pages past the Ranks tab (Overlap, Buckets, Graph, Messages, Hang, Links,
// Compare), made and connected to the timeline and the status bar.
#include <QStatusBar>
#include <QTabWidget>

#include "compare_page.h"
#include "empty_state.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "hang_view.h"
#include "links_page.h"
#include "main_window.h"
#include "messages_page.h"
#include "overlap_page.h"
#include "run_file_claim.h"
#include "run_file_watch.h"
#include "sequence_view.h"
#include "timeline_page.h"
#include "timeline_view.h"

namespace ddpscope::gui {

// Overlap, Buckets, Graph, Messages, Hang, Links and Compare.
void MainWindow::buildDetailPages() {
  m_overlapPage = new OverlapPage;
  addPage(m_overlapPage, "overlap", tr("Overlap"), m_overlapPage);
  connect(m_overlapPage, &OverlapPage::iterationClicked, this, &MainWindow::showIterationInTimeline);

  m_bucketPage = new BucketsPage;
  addPage(m_bucketPage, "buckets", tr("Buckets"), m_bucketPage);

  m_graphPage = new GraphPage([this]() -> probes::RunStoreReader& {
    probes::RunStoreReader* reader = m_fileWatch->reader();
    if (!reader) throw std::runtime_error(m_fileWatch->description().toStdString());
    return *reader;
  });
  addPage(m_graphPage, "graph", tr("Graph"), m_graphPage);
  connect(m_graphPage, &GraphPage::statusMessage, this,
          [this](const QString& text) { statusBar()->showMessage(text); });

  m_messages = new MessagesPage;
  m_messagesEmpty = new EmptyState(m_messages);
  addPage(m_messagesEmpty, "messages", tr("Messages"), m_messages);
  // A message picked there is selected in the timeline too, both ends ringed.
  connect(m_messages->view(), &SequenceView::arrowSelected, this,
          [this](const QString& text, int src, qint64 sendNs, int dst, qint64 recvNs) {
            refreshTab(m_timelineTab);  // the timeline must hold this run's flows
            m_timelineTab->setFlowNote(text);
            const bool shown = m_timeline->selectFlow(src, sendNs, dst, recvNs);
            statusBar()->showMessage(shown ? text + tr(" · selected in the timeline") : text);
          });

  m_hang = new HangView;
  // A collective clicked in the flight recorder's grid: the timeline there.
  // The rank's op there is selected too, so Details describe it (they said "Nothing selected").
  connect(m_hang, &HangView::collectiveClicked, this, [this](int rank, qint64 begin, qint64 end, const QString& what) {
    showRangeInTimeline(rank, begin, end, what + tr(" · in the timeline"));
    const SpanRef op = m_timeline->data().opOverlapping(rank, begin, end);
    if (op.valid()) m_timeline->select(op);
    statusBar()->showMessage(what + tr(" · in the timeline"));
  });
  // A running job's ranks asked for their stacks (the next live reload shows them).
  connect(m_hang, &HangView::askForStacks, this, [this] {
    if (!m_run) return;
    try {
      probes::ask_run_holder_for_stacks(m_run->path);
      statusBar()->showMessage(tr("Asked every rank for its threads' stacks: the table shows them as they arrive"));
    } catch (const std::exception& e) {
      statusBar()->showMessage(QString::fromUtf8(e.what()));
    }
  });
  m_hangEmpty = new EmptyState(m_hang);
  addPage(m_hangEmpty, "hang", tr("Hang"), m_hang);
  m_links = new LinksPage;
  addPage(m_links, "links", tr("Links"), m_links);
  m_tabs->setTabToolTip(m_tabs->indexOf(m_links),
                        tr("Bytes and rates between each pair of ranks and hosts, and the slow link"));
  m_compare = new ComparePage;
  m_compareEmpty = new EmptyState(m_compare);
  m_compareEmpty->setEmpty(
      tr("No comparison yet.\n\nOpen a run, then File ▸ Compare with another run... to put "
         "it (A) beside another (B): where their iteration time went, the ops that changed, "
         "and their timelines on one scale."));
  addPage(m_compareEmpty, "compare", tr("Compare"));
}

}  // namespace ddpscope::gui
