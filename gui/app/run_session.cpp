#include "run_session.h"

#include <QDir>
#include <QFileInfo>
#include <algorithm>
#include <set>

#include "chrome_trace_export.h"
#include "flight_import.h"
#include "live_run_loader.h"
#include "plural.h"
#include "run_file_watch.h"
#include "run_open_job.h"
#include "run_workspace.h"
#include "trace_import_job.h"
#include "user_message.h"

namespace ddpscope::gui {

RunSession::RunSession(const QString& workspace, QObject* parent)
    : QObject(parent),
      m_workspace(workspace),
      m_job(new JobController(this)),
      m_live(new LiveRunLoader(this)),
      m_fileWatch(new RunFileWatch(this)),
      m_opener(new RunOpenJob(this)),
      m_import(new TraceImportJob(this)) {
  connect(m_live, &LiveRunLoader::loaded, this, &RunSession::onLiveLoaded);
  connect(m_live, &LiveRunLoader::loadFailed, this, &RunSession::failed);
  connect(m_live, &LiveRunLoader::stalled, this, [this](qint64 ms) {
    m_stalled = true;
    emit stalled();
    emit statusMessage(tr("No progress for %1 s: see the Hang tab").arg(ms / 1000));
  });
  connect(m_live, &LiveRunLoader::resumed, this, [this] {
    m_stalled = false;
    emit resumed();
  });
  connect(m_job, &JobController::started, this,
          [this](const QString&, const QString& what) { emit liveStatus(tr("training %1").arg(what), true); });
  connect(m_job, &JobController::finished, this, &RunSession::onJobFinished);
  connect(m_job, &JobController::outputLine, this, [this](const QString& line) { emit statusMessage(line, 5000); });
  connect(m_opener, &RunOpenJob::started, this, [this](const QString& path) {
    emit openStarted(path);
    emit statusMessage(tr("Opening %1...").arg(QFileInfo(path).fileName()));
  });
  connect(m_opener, &RunOpenJob::opened, this, [this](const QString& path, std::shared_ptr<const RunData> run) {
    emit openEnded();
    showOpened(path, std::move(run));
  });
  connect(m_opener, &RunOpenJob::failed, this, [this](const QString& path, const QString& message) {
    emit openEnded();
    emit failed(tr("Cannot open %1: %2").arg(path, message));
  });
  connect(m_import, &TraceImportJob::progress, this, &RunSession::importProgress);
  connect(m_import, &TraceImportJob::finished, this, &RunSession::onImportFinished);
  connect(m_import, &TraceImportJob::failed, this, [this](const QString& message, bool cancelled) {
    emit importEnded();
    if (cancelled) {
      emit statusMessage(message);
    } else {
      emit failed(tr("Cannot import the traces: %1").arg(message));
    }
  });
}

RunSession::~RunSession() {
  // Ending the job emits finished(): it must not reach subscribers half torn down.
  m_job->disconnect(this);
  m_live->disconnect(this);
  delete m_job;  // stops a running job: no rank outlives the app
}

ShownRun RunSession::shown(bool sameRun) const {
  return {m_run, sameRun, m_fileWatch->reader(), m_stalled, m_job->isActive() && m_following};
}

void RunSession::setWantHang(bool want) { m_live->setWantHang(want); }

bool RunSession::returnToJob(const QString& path) {
  if (!m_job->isActive() || m_liveRun.isEmpty() || path != m_liveRun) return false;
  if (!m_following) {  // back to the running job
    m_following = true;
    m_stalled = false;
    m_live->watch(m_liveRun, 250, m_stallMs);
    emit statusMessage(tr("Following the running job again"));
  }
  return true;
}

bool RunSession::openRun(const QString& path) {
  m_opener->cancel();  // a file still loading in the background must not replace this one
  if (returnToJob(path)) return true;
  std::shared_ptr<const RunData> run;
  try {
    run = std::make_shared<const RunData>(loadRun(path.toStdString()));
  } catch (const std::exception& e) {
    // No exception crosses the event loop: the window says what went wrong.
    emit failed(tr("Cannot open %1: %2").arg(path, userMessage(e)));
    return false;
  }
  showOpened(path, std::move(run));
  return true;
}

void RunSession::openRunInBackground(const QString& path) {
  if (returnToJob(path)) {
    m_opener->cancel();
    return;
  }
  m_opener->open(path);
}

void RunSession::showOpened(const QString& path, std::shared_ptr<const RunData> run) {
  // The job, if one runs, goes on (its progress stays on the Live tab); its run file is
  // no longer re-read until the user comes back to it.
  m_live->cancel();
  m_following = false;
  if (!m_job->isActive()) m_liveRun.clear();
  m_stalled = false;
  show(std::move(run), false);
  emit runOpened(path);
  const QString spans = countOf(m_run->span_count, tr("span"));
  if (m_job->isActive() && !m_liveRun.isEmpty()) {
    emit statusMessage(tr("%1: %2. The job still runs: Run > Follow job returns to it").arg(path, spans));
  } else {
    emit statusMessage(tr("%1: %2").arg(path, spans));
  }
}

void RunSession::show(std::shared_ptr<const RunData> run, bool live) {
  const bool sameRun = m_run && run && m_run->path == run->path;
  emit runChanging(sameRun);
  m_run = std::move(run);
  // A new file (not a live reload of the same one): watch it on disk from now on.
  if (!sameRun || m_fileWatch->path().isEmpty() || m_fileWatch->state() == RunFileWatch::State::Replaced)
    m_fileWatch->watch(QString::fromStdString(m_run->path));
  emit runChanged(live, sameRun);
}

void RunSession::onLiveLoaded(std::shared_ptr<const RunData> run) {
  // A reload that finishes after the user opened another run is not shown over it.
  if (!m_following || QString::fromStdString(run->path) != m_liveRun) return;
  show(run, true);
  // The Collect dialog's rank table follows its run to the end: the reload after the
  // collector ended is the one that has every rank's host and outcome.
  if (m_job->lastWasCollection()) emit collectedRanks(*run);
  if (m_followingFile || m_job->isCollecting()) onCollectedRunLoaded(*run);
}

bool RunSession::importTraces(const QStringList& inputs) {
  const QString earlier = findExistingImport(inputs, m_workspace);
  if (!earlier.isEmpty() && !m_import->isRunning()) {  // imported before, and unchanged since
    if (!openRun(earlier)) return false;
    emit statusMessage(tr("These traces were imported before: opened %1").arg(earlier));
    emit importReused(earlier);
    return true;
  }
  const QString out = importTargetFor(inputs, m_workspace);
  QString error;
  if (!m_import->start(inputs, out, &error)) {
    emit statusMessage(error);
    return false;
  }
  emit importStarted(out);
  emit statusMessage(tr("Importing %1 into %2").arg(inputs.join(QStringLiteral(", ")), out));
  return true;
}

void RunSession::cancelImport() { m_import->cancel(); }

bool RunSession::isImporting() const { return m_import->isRunning(); }

void RunSession::onImportFinished(const QString& runFile, const QStringList& notes) {
  emit importEnded();
  if (!openRun(runFile)) return;
  QString message = tr("Imported PyTorch traces into %1").arg(runFile);
  if (!notes.isEmpty()) message += QStringLiteral(" (") + notes.join(QStringLiteral("; ")) + QStringLiteral(")");
  emit statusMessage(message);
}

bool RunSession::importFlightDumps(const QStringList& dumps, const QString& named) {
  const QString out = importTargetFor({named}, m_workspace);
  std::vector<std::string> files;
  for (const QString& d : dumps)
    files.push_back(d.toStdString());
  try {
    probes::import_flight_dumps(files, out.toStdString());
  } catch (const std::exception& e) {
    const QString why = tr("Could not import the flight-recorder dumps: %1").arg(userMessage(e));
    emit statusMessage(why);
    emit failed(why);
    return false;
  }
  if (!openRun(out)) return false;
  emit flightDumpsImported();
  emit statusMessage(tr("Imported %1 into %2").arg(countOf(dumps.size(), tr("flight-recorder dump"))).arg(out));
  return true;
}

QString RunSession::newRunFile(QString* error) const {
  try {
    const QString path = QString::fromStdString(probes::new_run_path());
    return m_workspace.isEmpty() ? path : QDir(m_workspace).filePath(QFileInfo(path).fileName());
  } catch (const std::exception& e) {
    *error = userMessage(e);
    return {};
  }
}

void RunSession::beginFollowing(const QString& path, const QString& status) {
  m_liveRun = path;
  m_following = !m_liveRun.isEmpty();
  m_stalled = false;
  emit followingStarted(m_job->isCollecting() || m_followingFile);  // no iteration count is known
  emit liveStatus(status, true);
  if (!m_liveRun.isEmpty()) m_live->watch(m_liveRun, 250, m_stallMs);
}

bool RunSession::launchJob(const LaunchConfig& config, QString* error) {
  const QString path = newRunFile(error);
  if (path.isEmpty() || !m_job->start(config, path, error)) return false;
  m_followingFile = false;
  beginFollowing(config.probes ? path : QString(),
                 tr("starting %1 (%2)...").arg(countOf(config.worldSize, tr("rank"))).arg(config.backend));
  emit statusMessage(tr("Launched: %1").arg(path));
  return true;
}

bool RunSession::startCollecting(const QString& listen, int expect, QString* error) {
  const QString path = newRunFile(error);
  if (path.isEmpty() || !m_job->startCollect(path, listen, expect, error)) return false;
  m_followingFile = false;
  beginFollowing(path, tr("collecting: waiting for the job's ranks (see Run > Collect from a job...)"));
  m_live->setStallAllowed(false);  // no rank yet: quiet is not a hang
  emit statusMessage(tr("Collecting into %1").arg(path));
  return true;
}

bool RunSession::followRunFile(const QString& path, QString* error) {
  if (m_job->isActive()) {
    *error = tr("a job is running in this window; open the run in another one");
    return false;
  }
  if (!QFileInfo(path).isFile()) {
    *error = tr("%1 does not exist (yet): start the collector first").arg(path);
    return false;
  }
  m_followingFile = true;
  const QString status = tr("following %1 as it grows").arg(QFileInfo(path).fileName());
  beginFollowing(path, status);
  emit liveStatus(status, false);  // its collector is another's: nothing here to stop
  m_live->setStallAllowed(false);
  emit statusMessage(tr("Following %1").arg(path));
  return true;
}

// A live reload of a run written by a collector (ours or another's): who has joined, and
// whether a quiet file now means a hang (some rank came and not every one has ended).
void RunSession::onCollectedRunLoaded(const RunData& run) {
  int joined = 0, events = 0;
  for (const auto& r : run.ranks) {
    ++joined;
    events += r.events_received > 0;
  }
  std::set<int> finished;
  for (const auto& a : run.attendance.attempts)
    if (!a.outcome.empty()) finished.insert(a.rank);
  for (const auto& a : run.attendance.attempts)
    if (a.outcome.empty()) finished.erase(a.rank);  // a later attempt of it still runs
  const int ended = static_cast<int>(finished.size());
  m_live->setStallAllowed(events > 0 && ended < joined);
  if (m_followingFile && run.run.status != "running") {  // its collector ended it: one last reload
    m_followingFile = false;
    m_live->stop();
    emit liveStatus(tr("the run is %1").arg(QString::fromStdString(run.run.status)), false);
  } else if (m_followingFile || m_job->isCollecting()) {
    int64_t iteration = 0;
    for (const auto& it : run.analysis.iterations)
      iteration = std::max(iteration, it.iteration);
    emit liveStatus(tr("collecting: %1 joined, %2 ended%3")
                        .arg(countOf(joined, tr("rank")))
                        .arg(ended)
                        .arg(iteration > 0 ? tr(" · iteration %1").arg(iteration) : QString()),
                    m_job->isCollecting());
  }
}

void RunSession::followJob() {
  if (!m_job->isActive() || m_liveRun.isEmpty()) {
    emit statusMessage(tr("No job with a run file is running"));
    return;
  }
  openRun(m_liveRun);
}

void RunSession::stopJob() {
  if (!m_job->isActive()) return;
  emit liveStatus(tr("stopping: every rank got SIGTERM (killed in 10 s if still running)"), false);
  m_job->stop();
}

void RunSession::onJobFinished(JobController::State state, const QString& message) {
  if (m_following) m_live->stop();  // one last reload shows the final state
  switch (state) {
    case JobController::State::Finished:
      emit liveStatus(tr("finished in %1 s").arg(m_job->elapsedMs() / 1000.0, 0, 'f', 1), false);
      break;
    case JobController::State::Stopped: emit liveStatus(tr("stopped"), false); break;
    default:
      emit liveStatus(tr("failed: %1").arg(message), false);
      emit statusMessage(tr("The job failed: %1").arg(message));
      break;
  }
  emit jobFinished(state, message);
}

bool RunSession::saveRunCopy(const QString& path) {
  QString error;
  if (!m_run || !m_fileWatch->saveCopy(path, &error)) {
    emit failed(tr("Cannot save a copy of the run as %1: %2").arg(path, m_run ? error : tr("no run is open")));
    return false;
  }
  emit statusMessage(tr("Saved a copy of the run as %1").arg(path));
  return true;
}

bool RunSession::exportChromeTrace(const QString& path) {
  try {
    // The run on screen, read through the kept connection: still there when the file
    // was deleted, and never another run written over it.
    probes::RunStoreReader* reader = m_fileWatch->reader();
    if (!reader) throw std::runtime_error(m_fileWatch->description().toStdString());
    const int64_t n = probes::export_chrome_trace(*reader, path.toStdString());
    emit statusMessage(tr("Wrote %1 trace events to %2").arg(n).arg(path));
    return true;
  } catch (const std::exception& e) {
    emit failed(tr("Export failed: %1").arg(userMessage(e)));
    return false;
  }
}

}  // namespace ddpscope::gui
