#include "run_file_watch.h"

#include <sys/stat.h>

#include <QFileInfo>

#include "run_store_reader.h"
#include "user_message.h"

namespace ddpscope::gui {
namespace {

// What tells one run from another written over it in place: its start time (to the
// second) and model, then its world size and backend. Not its config: a running PyTorch
// job merges the settings its ranks learn (DDP's bucket caps) into it. Nor, while the run
// is running, its world and backend: the ranks of a collected job grow the world as they
// join and name their backend (gloo) in place of "torch". Each made the app say its own
// live run was "replaced on disk". Lines: "created\nmodel", "running" or "world\nbackend".
std::string runIdentity(probes::RunStoreReader& reader) {
  const probes::RunRow r = reader.run();
  return r.created_at + "\n" + r.model + "\n" +
         (r.status == "running" ? std::string("running") : std::to_string(r.world_size) + "\n" + r.backend);
}

// Whether two identities are of the same run: the same start and model, and the same
// world and backend unless either was taken while it ran.
bool sameRun(const std::string& a, const std::string& b) {
  const auto head = [](const std::string& id) { return id.substr(0, id.find('\n', id.find('\n') + 1)); };
  const auto running = [](const std::string& id) {
    return id.size() >= 8 && id.compare(id.size() - 8, 8, "\nrunning") == 0;
  };
  return head(a) == head(b) && (running(a) || running(b) || a == b);
}

bool identity(const QString& path, unsigned long long* device, unsigned long long* inode) {
  struct stat st {};
  if (::stat(path.toLocal8Bit().constData(), &st) != 0) return false;
  *device = st.st_dev;
  *inode = st.st_ino;
  return true;
}

// "mlp, 2 ranks, started 2026-11-23T21:36:47+00:00", or why it is no run.
QString describeFile(const QString& path) {
  try {
    probes::RunStoreReader reader(path.toStdString());
    const probes::RunRow r = reader.run();
    return QStringLiteral("%1, %2 ranks, started %3")
        .arg(QString::fromStdString(r.model))
        .arg(r.world_size)
        .arg(QString::fromStdString(r.created_at));
  } catch (const std::exception&) {
    return QStringLiteral("a file that is not a readable ddpscope run");
  }
}

}  // namespace

RunFileWatch::RunFileWatch(QObject* parent) : QObject(parent) {
  m_delay.setSingleShot(true);
  m_delay.setInterval(300);
  connect(&m_delay, &QTimer::timeout, this, &RunFileWatch::check);
  connect(&m_watcher, &QFileSystemWatcher::fileChanged, this, [this] { m_delay.start(); });
  connect(&m_watcher, &QFileSystemWatcher::directoryChanged, this, [this] { m_delay.start(); });
}

RunFileWatch::~RunFileWatch() = default;

bool RunFileWatch::watch(const QString& path) {
  clear();
  try {
    m_kept = std::make_unique<probes::RunStoreReader>(path.toStdString());
    m_identity = runIdentity(*m_kept);
  } catch (const std::exception&) {
    m_kept.reset();
    return false;
  }
  if (!identity(path, &m_device, &m_inode)) {
    m_kept.reset();
    return false;
  }
  m_path = path;
  m_state = State::Intact;
  // The folder too: a file removed or renamed over is reported there (the file's own
  // watch ends with the old file).
  m_watcher.addPath(path);
  m_watcher.addPath(QFileInfo(path).absolutePath());
  return true;
}

void RunFileWatch::clear() {
  if (!m_watcher.files().isEmpty()) m_watcher.removePaths(m_watcher.files());
  if (!m_watcher.directories().isEmpty()) m_watcher.removePaths(m_watcher.directories());
  m_delay.stop();
  m_kept.reset();
  m_path.clear();
  m_identity.clear();
  m_state = State::None;
  m_rewrittenInPlace = false;
  m_description.clear();
}

void RunFileWatch::check() {
  if (m_state == State::None) return;
  const QString name = QFileInfo(m_path).fileName();
  State now = State::Intact;
  unsigned long long device = 0, inode = 0;
  if (!identity(m_path, &device, &inode)) {
    now = State::Deleted;
    m_description = tr("The run file %1 was deleted from disk. The views still show the run as it was loaded; "
                       "File > Save a copy of the run… writes it out again.")
                        .arg(m_path);
  } else {
    bool replaced = device != m_device || inode != m_inode;
    if (!replaced) {
      try {  // the same file, rewritten in place with another run?
        probes::RunStoreReader reader(m_path.toStdString());
        replaced = !sameRun(runIdentity(reader), m_identity);
      } catch (const std::exception&) {
        replaced = true;  // damaged or emptied: no longer the run on screen
      }
      m_rewrittenInPlace = replaced;
    }
    if (replaced) {
      now = State::Replaced;
      m_description = tr("The run file %1 was replaced on disk by %2. The views still show the earlier run; "
                         "Reload shows the new file, File > Save a copy of the run… keeps the earlier one.")
                          .arg(name, describeFile(m_path));
    }
  }
  // The file's own watch is lost when it is replaced: watch the new one too.
  if (now != State::Deleted && !m_watcher.files().contains(m_path)) m_watcher.addPath(m_path);
  if (now == State::Intact) m_description.clear();
  if (now != m_state) {
    m_state = now;
    emit stateChanged(now);
  }
}

probes::RunStoreReader* RunFileWatch::reader() { return m_rewrittenInPlace ? nullptr : m_kept.get(); }

bool RunFileWatch::saveCopy(const QString& dest, QString* error) {
  if (!reader()) {
    if (error)
      *error = m_kept ? tr("the run file was rewritten in place with another run; the earlier run is gone")
                      : tr("no run is open");
    return false;
  }
  try {
    m_kept->save_copy(dest.toStdString());
    return true;
  } catch (const std::exception& e) {
    if (error) *error = userMessage(e);
    return false;
  }
}

}  // namespace ddpscope::gui
