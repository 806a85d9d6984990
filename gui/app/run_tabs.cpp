#include "run_tabs.h"

#include "empty_state.h"
#include "run_data.h"
#include "run_page.h"
#include "run_session.h"
#include "splitter_memory.h"

namespace ddpscope::gui {

namespace {
const char* const kTabIdProperty = "ddpscopeTabId";
}

QString RunPage::noRunOpen() {
  return QObject::tr(
      "No run open.\n\nOpen one from the list on the left (or File ▸ Open run or traces..., "
      "or drop a PyTorch job's traces here), or launch a job: Run ▸ Launch job... (Ctrl+L).");
}

QString RunPage::noDdpIterations() {
  return QObject::tr(
      "This run recorded no DDP training iterations (an RPC or distributed-autograd run, or "
      "a job that ended before its first iteration), so there is nothing to show here.\n\n"
      "See its Timeline, Messages and Graph tabs; DDP runs come from ddpscope-cli train.");
}

RunTabs::RunTabs(RunSession* session, QWidget* parent) : QTabWidget(parent), m_session(session) {
  setObjectName(QStringLiteral("tabs"));  // names: MainWindow::part
  connect(session, &RunSession::runChanging, this, [this](bool sameRun) {
    for (const auto& [widget, page] : m_runPages)
      page->releaseRun(sameRun);
  });
  connect(session, &RunSession::runChanged, this, &RunTabs::onRunChanged);
  // A stall (and its end) changes what the Hang page says about the same run.
  for (auto stallSignal : {&RunSession::stalled, &RunSession::resumed}) {
    connect(session, stallSignal, this, [this] {
      if (RunPage* hang = pageShowing(QStringLiteral("hang"))) {
        m_dirty.insert(hang);
        refresh(hang);
      }
    });
  }
  connect(this, &QTabWidget::currentChanged, this, [this] { refreshCurrent(); });
}

void RunTabs::addPage(QWidget* page, const char* id, const QString& title, RunPage* shows) {
  page->setProperty(kTabIdProperty, QString::fromLatin1(id));
  addTab(page, title);
  rememberSplitters(page, QString::fromLatin1(id));
  if (!shows) return;
  m_runPages.emplace_back(page, shows);
  sayWhyEmpty(page, *shows);
}

// The EmptyState of the tab: the tab itself, or the one in it.
void RunTabs::sayWhyEmpty(QWidget* tab, const RunPage& page) const {
  const std::optional<QString> why = page.whyEmpty(m_session->run().get());
  if (!why) return;
  auto* empty = qobject_cast<EmptyState*>(tab);
  if (!empty) empty = tab->findChild<EmptyState*>();
  if (empty) empty->setEmpty(*why);
}

RunPage* RunTabs::runPageAt(int index) const {
  const QWidget* tab = widget(index);
  for (const auto& [w, page] : m_runPages)
    if (w == tab) return page;
  return nullptr;
}

RunPage* RunTabs::pageShowing(const QString& id) const { return runPageAt(tabIndex(id)); }

int RunTabs::tabIndex(const QString& id) const {
  for (int i = 0; i < count(); ++i) {
    if (widget(i)->property(kTabIdProperty).toString().compare(id, Qt::CaseInsensitive) == 0) return i;
  }
  return -1;
}

void RunTabs::showTab(const QString& id) {
  if (const int i = tabIndex(id); i >= 0) setCurrentIndex(i);
}

bool RunTabs::tabIsEmpty(const QString& id) const {
  const int i = tabIndex(id);
  if (i < 0) return false;
  if (auto* e = qobject_cast<EmptyState*>(widget(i))) return e->isEmpty();
  for (auto* e : widget(i)->findChildren<EmptyState*>())
    return e->isEmpty();
  return false;
}

void RunTabs::onRunChanged(bool live, bool sameRun) {
  for (const auto& [tab, page] : m_runPages)
    sayWhyEmpty(tab, *page);
  m_dirty.clear();
  for (const auto& [widget, page] : m_runPages)
    m_dirty.insert(page);
  m_sameRun = sameRun;
  // A big run fills each page when it is first shown: the Buckets page's advice alone
  // reads every gradient-ready tick (seconds for 100M spans).
  if (live || m_session->run()->span_count > detailAtOpen()) {
    refreshCurrent();
  } else {
    for (const auto& [widget, page] : m_runPages)
      refresh(page);
  }
}

void RunTabs::refreshCurrent() {
  RunPage* page = runPageAt(currentIndex());
  m_session->setWantHang(page && page == pageShowing(QStringLiteral("hang")));  // live reloads skip it otherwise
  refresh(page);
}

void RunTabs::refresh(RunPage* page) {
  if (!m_session->run() || !page || !m_dirty.count(page)) return;
  m_dirty.erase(page);
  page->showRun(m_session->shown(m_sameRun));
}

}  // namespace ddpscope::gui
