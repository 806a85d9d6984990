// RunFileWatch: notices when the run file on screen is deleted or replaced on disk (rm,
// a new run written over it with --force, a copy moved over it). The views hold what
// was loaded, but some actions read the file again (graphs, bucket advice, trace
// export): after a replacement they would read another run, after a deletion fail. The
// window asks state() before them, and says what happened in its banner.
//
// It keeps a read-only SQLite connection on the file: a deleted file's contents stay
// reachable through it, so saveCopy() can still write them out. A run that grows (a
// live job) is the same run: only another file, or another run in the same file
// (its start time, configuration or size differs), counts as replaced.
#pragma once

#include <QFileSystemWatcher>
#include <QObject>
#include <QString>
#include <QTimer>
#include <memory>

namespace ddpscope::probes {
class RunStoreReader;
}

namespace ddpscope::gui {

class RunFileWatch : public QObject {
  Q_OBJECT

 public:
  enum class State { None, Intact, Deleted, Replaced };

  explicit RunFileWatch(QObject* parent = nullptr);
  ~RunFileWatch() override;

  // Starts watching `path`, the run file just loaded; false (and no watch) when it
  // cannot be opened again.
  bool watch(const QString& path);
  void clear();
  State state() const { return m_state; }
  QString path() const { return m_path; }
  // What happened, in a sentence for the banner; empty while intact.
  QString description() const { return m_description; }
  // A reader of the run on screen, for the actions that read it again: the kept
  // connection, which still reads the original file after it was deleted or renamed
  // over. Null when no run is watched or the file was rewritten in place with another run.
  probes::RunStoreReader* reader();
  // Copies the run as it was loaded to `dest` (VACUUM INTO through the kept
  // connection); false with the reason in `error`.
  bool saveCopy(const QString& dest, QString* error);
  // Looks at the file now (the watcher's signal calls it after a short delay).
  void check();

 signals:
  void stateChanged(State state);

 private:
  QFileSystemWatcher m_watcher;
  QTimer m_delay;  // a replacement is a burst of events: look once it has settled
  QString m_path;
  unsigned long long m_device = 0, m_inode = 0;
  std::string m_identity;  // runIdentity() of the run loaded
  std::unique_ptr<probes::RunStoreReader> m_kept;
  State m_state = State::None;
  bool m_rewrittenInPlace = false;  // replaced, and the kept connection sees the new run
  QString m_description;
};

}  // namespace ddpscope::gui
