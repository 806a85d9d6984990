#include "live_run_loader.h"
#include "user_message.h"

#include <QDateTime>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <chrono>

namespace ddpscope::gui {
namespace {

// What loadRun reports, or an exception's message as the null result's reason.
// Size and modification time of the run file and its WAL: they change with every
// committed batch.
QString fileStamp(const QString& path) {
  QString stamp;
  for (const QString& p : {path, path + QStringLiteral("-wal")}) {
    const QFileInfo f(p);
    stamp += QStringLiteral("%1:%2;").arg(f.size()).arg(f.lastModified().toMSecsSinceEpoch());
  }
  return stamp;
}

std::shared_ptr<const RunData> loadInBackground(const std::string& path, std::shared_ptr<const RunData> previous,
                                                bool with_hang, QString* error) {
  try {
    const auto now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    return std::make_shared<const RunData>(loadRun(path, now, previous.get(), with_hang));
  } catch (const std::exception& e) {
    *error = userMessage(e);
    return nullptr;
  }
}

}  // namespace

LiveRunLoader::LiveRunLoader(QObject* parent) : QObject(parent) {
  connect(&m_timer, &QTimer::timeout, this, &LiveRunLoader::tick);
  connect(&m_watcher, &QFutureWatcher<std::shared_ptr<const RunData>>::finished, this, &LiveRunLoader::onLoaded);
}

LiveRunLoader::~LiveRunLoader() {
  m_timer.stop();
  m_watcher.waitForFinished();  // the task reads m_error through a pointer into this
}

void LiveRunLoader::watch(const QString& path, int intervalMs, int stallMs) {
  m_path = path;
  m_previous.reset();
  m_loadedStamp.clear();
  m_loadedHang = false;
  m_stallMs = stallMs;
  m_lastEvents = -1;
  m_stalled = false;
  m_stallAllowed = true;
  m_finalReload = false;
  m_sinceChange.start();
  m_timer.start(intervalMs);
  tick();
}

void LiveRunLoader::cancel() {
  m_timer.stop();
  m_finalReload = false;
}

void LiveRunLoader::stop() {
  m_timer.stop();
  // A reload running now may miss the last events: then one more follows it.
  if (m_watcher.isRunning()) {
    m_finalReload = true;
  } else {
    tick();
  }
}

void LiveRunLoader::tick() {
  if (m_watcher.isRunning() || m_path.isEmpty()) return;
  if (!QFileInfo::exists(m_path)) return;  // the collector has not created it yet
  const bool want_hang = m_wantHang || m_stalled || !m_timer.isActive();
  const QString stamp = fileStamp(m_path);
  if (stamp == m_loadedStamp && (m_loadedHang || !want_hang)) {
    checkStall();  // nothing new to read
    return;
  }
  m_error.clear();
  m_pendingStamp = stamp;
  m_pendingHang = want_hang;
  m_watcher.setFuture(QtConcurrent::run(loadInBackground, m_path.toStdString(), m_previous, want_hang, &m_error));
}

void LiveRunLoader::checkStall() {
  if (!m_stallAllowed) m_sinceChange.restart();  // the quiet time counts from when it matters
  if (!m_stalled && m_stallAllowed && m_timer.isActive() && m_sinceChange.elapsed() >= m_stallMs) {
    m_stalled = true;
    emit stalled(m_sinceChange.elapsed());
  }
}

void LiveRunLoader::onLoaded() {
  const auto run = m_watcher.result();
  if (!run) {
    // A file being created can be briefly unreadable; only a file that stays so matters.
    if (!m_error.isEmpty()) emit loadFailed(m_error);
  } else {
    ++m_reloads;
    m_previous = run;
    m_loadedStamp = m_pendingStamp;
    m_loadedHang = m_pendingHang;
    int64_t events = 0;
    for (const auto& r : run->ranks)
      events += r.events_received;
    if (events != m_lastEvents) {
      m_lastEvents = events;
      m_sinceChange.restart();
      if (m_stalled) {
        m_stalled = false;
        emit resumed();
      }
    } else {
      checkStall();
    }
    emit loaded(run);
  }
  if (m_finalReload) {
    m_finalReload = false;
    tick();
  }
}

}  // namespace ddpscope::gui
