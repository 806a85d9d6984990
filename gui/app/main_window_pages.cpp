// MainWindow: the pages, made, placed in the tabs and subscribed to the run session, and the
// links between them (a bar, a cell or a message clicked on one page shows its place in the
// timeline).
#include <QFileInfo>
#include <QScrollArea>
#include <QStatusBar>

#include "buckets_page.h"
#include "compare_page.h"
#include "empty_state.h"
#include "graph_page.h"
#include "hang_view.h"
#include "learn_page.h"
#include "links_page.h"
#include "live_monitor.h"
#include "main_window.h"
#include "messages_page.h"
#include "overlap_page.h"
#include "ranks_page.h"
#include "run_file_claim.h"
#include "run_file_watch.h"
#include "run_list_model.h"
#include "run_list_panel.h"
#include "run_tabs.h"
#include "sequence_view.h"
#include "summary_page.h"
#include "time_breakdown_page.h"
#include "timeline_page.h"
#include "timeline_view.h"

namespace ddpscope::gui {

namespace {

// The Summary and the Live charts show every run at once, live as it grows.
void showEveryRun(MainWindow* window, RunSession* session) {
  auto* summary = window->part<SummaryPage>();
  auto* monitor = window->part<LiveMonitor>();
  QObject::connect(session, &RunSession::runChanged, window, [session, summary, monitor](bool live) {
    const RunData& run = *session->run();
    summary->setRun(run);
    monitor->setRun(run, live);
    if (!live && !session->job()->isActive())
      monitor->setStatus(LiveMonitor::finishedStatus(run, QFileInfo(QString::fromStdString(run.path)).fileName()),
                         false);
  });
  QObject::connect(session, &RunSession::liveStatus, monitor, &LiveMonitor::setStatus);
  QObject::connect(session, &RunSession::followingStarted, monitor, [monitor](bool unbounded) {
    monitor->clear();
    if (unbounded) monitor->setUnbounded();  // no iteration count is known
  });
  QObject::connect(session->job(), &JobController::progress, monitor, &LiveMonitor::setProgress);
  QObject::connect(monitor, &LiveMonitor::stopRequested, session, &RunSession::stopJob);
}

// Clicks on one page that show their place in the timeline: `rank`'s [begin, end), that
// rank expanded, what was clicked said in the status bar.
void linkToTimeline(MainWindow* window, RunSession* session, RunTabs* tabs) {
  auto* timeline = window->part<TimelinePage>();
  const auto say = [window](const QString& text) { window->statusBar()->showMessage(text); };
  const auto showRange = [window, tabs, timeline, say](int rank, int64_t begin, int64_t end, const QString& said) {
    tabs->refresh(timeline);
    window->showTab(QStringLiteral("timeline"));
    timeline->view()->showTimeRange(rank, begin, end);
    say(said);
  };
  QObject::connect(window->part<SummaryPage>(), &SummaryPage::gapClicked, window,
                   [showRange](int rank, qint64 begin, qint64 end) {
                     showRange(rank, begin, end,
                               MainWindow::tr("rank %1's GPU idle for %2 ms · in the timeline")
                                   .arg(rank)
                                   .arg((end - begin) / 1e6, 0, 'f', 3));
                   });
  QObject::connect(window->part<RanksPage>(), &RanksPage::iterationClicked, window,
                   [session, showRange](int rank, int64_t iteration) {
                     if (!session->run()) return;
                     for (const auto& it : session->run()->analysis.iterations) {
                       if (it.rank != rank || it.iteration != iteration) continue;
                       showRange(rank, it.t_begin_ns, it.t_end_ns,
                                 MainWindow::tr("Rank %1, iteration %2 in the timeline").arg(rank).arg(iteration));
                       return;
                     }
                   });
  QObject::connect(window->part<OverlapPage>(), &OverlapPage::iterationClicked, window,
                   [window, timeline, say](int64_t iteration) {
                     window->showTab(QStringLiteral("timeline"));
                     const auto& its = timeline->view()->data().iterations;
                     for (size_t i = 0; i < its.size(); ++i) {
                       if (its[i].number != iteration) continue;
                       timeline->view()->showIteration(static_cast<int>(i));
                       say(MainWindow::tr("Iteration %1 in the timeline").arg(iteration));
                       return;
                     }
                   });
  // A message picked there is selected in the timeline too, both ends ringed.
  QObject::connect(window->part<MessagesPage>()->view(), &SequenceView::arrowSelected, window,
                   [tabs, timeline, say](const QString& text, int src, qint64 sendNs, int dst, qint64 recvNs) {
                     tabs->refresh(timeline);  // the timeline must hold this run's flows
                     timeline->setFlowNote(text);
                     const bool shown = timeline->view()->selectFlow(src, sendNs, dst, recvNs);
                     say(shown ? text + MainWindow::tr(" · selected in the timeline") : text);
                   });
  // A collective clicked in the flight recorder's grid: the timeline there, the rank's op
  // selected, so Details describe it (they said "Nothing selected").
  auto* hang = window->part<HangView>();
  QObject::connect(hang, &HangView::collectiveClicked, window,
                   [timeline, showRange](int rank, qint64 begin, qint64 end, const QString& what) {
                     showRange(rank, begin, end, what + MainWindow::tr(" · in the timeline"));
                     const SpanRef op = timeline->view()->data().opOverlapping(rank, begin, end);
                     if (op.valid()) timeline->view()->select(op);
                   });
  // A running job's ranks asked for their stacks (the next live reload shows them).
  QObject::connect(hang, &HangView::askForStacks, window, [session, say] {
    if (!session->run()) return;
    try {
      probes::ask_run_holder_for_stacks(session->run()->path);
      say(MainWindow::tr("Asked every rank for its threads' stacks: the table shows them as they arrive"));
    } catch (const std::exception& e) {
      say(QString::fromUtf8(e.what()));
    }
  });
  QObject::connect(timeline->view(), &TimelineView::spanClicked, window, say);
  QObject::connect(window->part<GraphPage>(), &GraphPage::statusMessage, window, say);
}

}  // namespace

void MainWindow::buildPages() {
  auto* summary = new SummaryPage;
  // Scrolled: a long summary (a wide job's ranks, GPU tables) must not set the window's
  // minimum height.
  auto* summaryScroll = new QScrollArea;
  summaryScroll->setWidget(summary);
  summaryScroll->setWidgetResizable(true);
  summaryScroll->setFrameShape(QFrame::NoFrame);
  m_tabs->addPage(summaryScroll, "summary", tr("Summary"));
  auto* monitor = new LiveMonitor;
  m_tabs->addPage(monitor, "live", tr("Live"));
  auto* timeline = new TimelinePage;
  m_tabs->addPage(timeline, "timeline", tr("Timeline"), timeline);
  auto* breakdown = new TimeBreakdownPage;
  m_tabs->addPage(breakdown, "breakdown", tr("Breakdown"), breakdown);
  m_tabs->setTabToolTip(m_tabs->indexOf(breakdown), tr("Where the time went: per rank and iteration"));
  auto* ranks = new RanksPage;
  m_tabs->addPage(ranks, "ranks", tr("Ranks"), ranks);
  m_tabs->setTabToolTip(m_tabs->indexOf(ranks), tr("Every rank's every iteration at a glance, slowest first"));
  auto* overlap = new OverlapPage;
  m_tabs->addPage(overlap, "overlap", tr("Overlap"), overlap);
  auto* buckets = new BucketsPage;
  m_tabs->addPage(buckets, "buckets", tr("Buckets"), buckets);
  auto* graph = new GraphPage([this]() -> probes::RunStoreReader& {
    probes::RunStoreReader* reader = m_session->fileWatch()->reader();
    if (!reader) throw std::runtime_error(m_session->fileWatch()->description().toStdString());
    return *reader;
  });
  m_tabs->addPage(graph, "graph", tr("Graph"), graph);
  auto* messages = new MessagesPage;
  auto* messagesEmpty = new EmptyState(messages);
  m_tabs->addPage(messagesEmpty, "messages", tr("Messages"), messages);
  auto* hang = new HangView;
  auto* hangEmpty = new EmptyState(hang);
  m_tabs->addPage(hangEmpty, "hang", tr("Hang"), hang);
  auto* links = new LinksPage;
  m_tabs->addPage(links, "links", tr("Links"), links);
  m_tabs->setTabToolTip(m_tabs->indexOf(links),
                        tr("Bytes and rates between each pair of ranks and hosts, and the slow link"));
  auto* compare = new ComparePage;
  auto* compareEmpty = new EmptyState(compare);
  compareEmpty->setEmpty(
      tr("No comparison yet.\n\nOpen a run, then File ▸ Compare with another run... to put "
         "it (A) beside another (B): where their iteration time went, the ops that changed, "
         "and their timelines on one scale."));
  m_tabs->addPage(compareEmpty, "compare", tr("Compare"));
  // The Learn tab: live re-recordings of a lesson go into the workspace, through the CLI.
  m_learn = new LearnPage(m_session->workspace(), m_session->job()->cliPath());
  m_tabs->addPage(m_learn, "learn", tr("Learn"));
  connect(m_learn, &LearnPage::statusMessage, this, [this](const QString& text) { statusBar()->showMessage(text); });
  connect(m_learn, &LearnPage::lessonLoaded, m_runList->runs(), &RunListModel::refresh);

  showEveryRun(this, m_session);
  linkToTimeline(this, m_session, m_tabs);
}

}  // namespace ddpscope::gui
