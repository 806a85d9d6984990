// LiveRunLoader: reloads a growing run file in the background, at most every
// `intervalMs` (default 250 ms, so that with a reload taking up to 250 ms the live views
// still update at least twice a second), and
// hands the new RunData to the UI thread. A reload never overlaps the previous one, so a
// slow disk or a big run lowers the rate instead of piling up work; the UI thread never
// waits. It also says when the run stopped growing for `stallMs` (a hang).
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QTimer>
#include <memory>

#include "run_data.h"

namespace ddpscope::gui {

class LiveRunLoader : public QObject {
  Q_OBJECT

 public:
  explicit LiveRunLoader(QObject* parent = nullptr);
  ~LiveRunLoader() override;

  void watch(const QString& path, int intervalMs = 250, int stallMs = 10000);
  void stop();    // one last reload follows, so the final state is shown
  void cancel();  // no further reloads; one already running still reports
  bool isWatching() const { return m_timer.isActive(); }
  QString path() const { return m_path; }
  int reloads() const { return m_reloads; }
  bool isStalled() const { return m_stalled; }
  // Whether reloads include the hang analysis (always once the run stalled).
  void setWantHang(bool want) { m_wantHang = want; }
  // Whether a quiet file is a stall: not while a collector waits for a job's first rank,
  // nor once every rank that came has ended.
  void setStallAllowed(bool allowed) { m_stallAllowed = allowed; }

 signals:
  void loaded(std::shared_ptr<const ddpscope::gui::RunData> run);
  // The run file exists but cannot be read (yet); a missing file is simply waited for.
  void loadFailed(const QString& message);
  // No new event for `ms` while watched: shown as a possible hang.
  void stalled(qint64 ms);
  void resumed();

 private:
  void tick();
  void onLoaded();
  // No new event for stallMs: says so once.
  void checkStall();

  QString m_path;
  QTimer m_timer;
  QFutureWatcher<std::shared_ptr<const RunData>> m_watcher;
  QElapsedTimer m_sinceChange;
  int64_t m_lastEvents = -1;
  int m_stallMs = 10000;
  int m_reloads = 0;
  bool m_stalled = false;
  bool m_finalReload = false;
  QString m_error;  // written by the background load, read after it finished
  bool m_wantHang = false;
  bool m_stallAllowed = true;
  std::shared_ptr<const RunData> m_previous;  // the timeline grows from it
  // The file (and its WAL) as of the last load, and whether that load had the hang
  // analysis: an unchanged file is not read again (a hung job writes nothing).
  QString m_loadedStamp, m_pendingStamp;
  bool m_loadedHang = false, m_pendingHang = false;
};

}  // namespace ddpscope::gui
