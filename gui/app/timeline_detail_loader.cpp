#include "timeline_detail_loader.h"

#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>

#include "time_format.h"
#include "timeline_view.h"

namespace ddpscope::gui {

namespace {

QString spans(int64_t n) {
  if (n >= 1'000'000) return QStringLiteral("%1M").arg(static_cast<double>(n) / 1e6, 0, 'f', 1);
  if (n >= 1'000) return QStringLiteral("%1k").arg(static_cast<double>(n) / 1e3, 0, 'f', 0);
  return QString::number(n);
}

}  // namespace

TimelineDetailLoader::TimelineDetailLoader(TimelineView* view, QObject* parent) : QObject(parent), m_view(view) {
  m_settle.setSingleShot(true);
  m_settle.setInterval(150);
  connect(&m_settle, &QTimer::timeout, this, &TimelineDetailLoader::consider);
  connect(view, &TimelineView::windowChanged, &m_settle, qOverload<>(&QTimer::start));
  connect(&m_watcher, &QFutureWatcher<std::shared_ptr<const TimelineData>>::finished, this,
          &TimelineDetailLoader::onFinished);
}

TimelineDetailLoader::~TimelineDetailLoader() { m_watcher.waitForFinished(); }

int64_t TimelineDetailLoader::detailSpansIn(const std::vector<probes::PackExtent>& packs, int64_t begin_ns,
                                            int64_t end_ns) {
  int64_t n = 0;
  for (const auto& p : packs) {
    if (p.detail && p.t_max >= begin_ns && p.t_min <= end_ns) n += p.count;
  }
  return n;
}

void TimelineDetailLoader::setRun(std::shared_ptr<const RunData> run) {
  ++m_generation;
  m_run.reset();
  m_structure.reset();
  m_hasLoaded = false;
  if (!run || run->timeline.has_detail) {
    setStatus({});
    return;
  }
  m_run = std::move(run);
  m_structure = std::shared_ptr<const TimelineData>(m_run, &m_run->timeline);
  m_structureSpans = 0;
  for (const auto& lane : m_structure->lanes)
    m_structureSpans += static_cast<int64_t>(lane.spans.size());
  m_settle.start();
}

// The window shown, with as much again on each side when the budget allows (a pan then
// stays inside it); else the window alone; else nothing, and the page says why.
void TimelineDetailLoader::consider() {
  if (!m_run || m_view->data().lanes.empty()) return;
  const int64_t begin = m_view->axis().begin_ns, end = m_view->axis().end_ns;
  if (m_hasLoaded && m_loaded.begin_ns <= begin && end <= m_loaded.end_ns) return;
  if (isLoading()) return;  // onFinished looks again
  const int64_t width = std::max<int64_t>(end - begin, 1);
  probes::TimeWindow wanted{begin - width, end + width};
  if (detailSpansIn(m_run->packs, wanted.begin_ns, wanted.end_ns) > m_windowSpans) wanted = {begin, end};
  const int64_t n = detailSpansIn(m_run->packs, wanted.begin_ns, wanted.end_ns);
  if (n > m_windowSpans) {
    const int64_t all =
        detailSpansIn(m_run->packs, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    setStatus(tr("This run has %1 detail spans (autograd nodes, gradient ticks, copies, kernels): they show once "
                 "the window holds fewer than %2 of them (it holds %3). Zoom in.")
                  .arg(spans(all), spans(m_windowSpans), spans(n)));
    return;
  }
  start(wanted);
}

void TimelineDetailLoader::start(probes::TimeWindow window) {
  m_loading = window;
  m_loadingGeneration = m_generation;
  if (m_hasLoaded && m_structureSpans > kStructureHeldTwice) {
    m_view->updateData(m_structure);  // the last window's copy goes before the next is made
    m_hasLoaded = false;
  }
  setStatus(tr("Loading the detail of %1 of the run…")
                .arg(QString::fromStdString(formatDuration(std::min(window.end_ns, m_structure->end_ns) -
                                                           std::max(window.begin_ns, m_structure->begin_ns)))));
  m_watcher.setFuture(QtConcurrent::run([path = m_run->path, structure = m_structure, window] {
    try {
      probes::RunStoreReader reader(path);
      return std::make_shared<const TimelineData>(withDetail(*structure, reader, window));
    } catch (const std::exception&) {
      return std::shared_ptr<const TimelineData>();  // the file went away: the structure stays
    }
  }));
}

void TimelineDetailLoader::onFinished() {
  std::shared_ptr<const TimelineData> data = m_watcher.result();
  if (m_loadingGeneration != m_generation) {  // another run meanwhile
    consider();
    return;
  }
  if (!data) {
    setStatus(tr("The detail could not be read from the run file; the timeline shows its structure."));
    return;
  }
  m_loaded = m_loading;
  m_hasLoaded = true;
  m_view->updateData(data);
  const int64_t from = std::max(m_loaded.begin_ns, data->begin_ns), to = std::min(m_loaded.end_ns, data->end_ns);
  setStatus(tr("Detail shown for %1 of the run's %2 (a big run loads the detail of the window you zoom into).")
                .arg(QString::fromStdString(formatDuration(to - from)),
                     QString::fromStdString(formatDuration(data->end_ns - data->begin_ns))));
  emit loaded();
  consider();  // the window may have moved while this one loaded
}

void TimelineDetailLoader::setStatus(const QString& status) {
  if (status == m_status) return;
  m_status = status;
  emit statusChanged(status);
}

}  // namespace ddpscope::gui
