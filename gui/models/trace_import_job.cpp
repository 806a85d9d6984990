#include "trace_import_job.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "flight_records.h"
#include "run_store_reader.h"
#include "torch_trace_import.h"
#include "user_message.h"

namespace ddpscope::gui {

TraceImportJob::TraceImportJob(QObject* parent) : QObject(parent) {
  connect(&m_watcher, &QFutureWatcher<Outcome>::finished, this, &TraceImportJob::onDone);
}

TraceImportJob::~TraceImportJob() {
  cancel();
  m_watcher.waitForFinished();
}

bool TraceImportJob::start(const QStringList& inputs, const QString& out, QString* error) {
  if (isRunning()) {
    if (error) *error = tr("Traces are being imported already; wait for them or cancel that import");
    return false;
  }
  m_out = out;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::string> in;
  for (const QString& p : inputs)
    in.push_back(p.toStdString());
  // The worker holds its own copies: nothing of `this` but the signal it emits, and the
  // destructor waits for it.
  m_watcher.setFuture(QtConcurrent::run([this, in, out = out.toStdString(), cancel = m_cancel] {
    Outcome outcome;
    probes::TorchImportOptions options;
    double shown = -1;
    options.progress = [&](double fraction, const std::string& what) {
      if (cancel->load()) return false;
      if (fraction - shown >= 0.005 || fraction >= 1.0) {  // a few hundred updates at most
        shown = fraction;
        emit progress(fraction, QString::fromStdString(what));
      }
      return true;
    };
    try {
      const probes::TorchImportResult r = probes::import_torch_traces(in, out, options);
      outcome.ok = true;
      for (const auto& n : r.notes)
        outcome.notes << QString::fromStdString(n);
    } catch (const std::exception& e) {
      outcome.cancelled = cancel->load();
      outcome.error = userMessage(e);
    }
    return outcome;
  }));
  return true;
}

void TraceImportJob::cancel() {
  if (m_cancel) m_cancel->store(true);
}

void TraceImportJob::onDone() {
  const Outcome outcome = m_watcher.result();
  if (outcome.ok) {
    emit finished(m_out, outcome.notes);
  } else {
    emit failed(outcome.cancelled ? tr("Import cancelled; no run was written") : outcome.error, outcome.cancelled);
  }
}

QStringList flightDumpFiles(const QString& path) {
  const QFileInfo f(path);
  if (f.isFile()) return probes::looks_like_flight_dump(path.toStdString()) ? QStringList{path} : QStringList{};
  if (!f.isDir()) return {};
  // A folder of dumps (JSON and pickles mixed; other files left out), unless it holds
  // profiler traces: then it is a folder of traces.
  QStringList dumps;
  for (const std::string& p : probes::dumps_in_folder(path.toStdString()))
    dumps << QString::fromStdString(p);
  return dumps;
}

bool isTraceInput(const QString& path) {
  const QFileInfo f(path);
  if (f.isDir()) return true;
  const QString name = f.fileName().toLower();
  return name.endsWith(QStringLiteral(".json")) || name.endsWith(QStringLiteral(".json.gz"));
}

QString findExistingImport(const QStringList& inputs, const QString& workspace) {
  std::set<std::string> wanted;
  QDateTime newest;
  try {
    std::vector<std::string> in;
    for (const QString& p : inputs)
      in.push_back(p.toStdString());
    for (const std::string& f : probes::list_trace_files(in)) {
      wanted.insert(std::filesystem::absolute(f).lexically_normal().string());
      newest = std::max(newest, QFileInfo(QString::fromStdString(f)).lastModified());
    }
  } catch (const std::exception&) {
    return {};  // the import itself will say what is wrong
  }
  for (const QFileInfo& run : QDir(workspace).entryInfoList({QStringLiteral("*.ddprun")}, QDir::Files)) {
    if (run.lastModified() < newest) continue;
    try {
      probes::RunStoreReader reader(run.absoluteFilePath().toStdString());
      const auto config = nlohmann::json::parse(reader.run().config_json);
      if (config.value("source", "") != "torch-trace" || reader.run().status != "finished") continue;
      std::set<std::string> traces;
      const nlohmann::json files = config.value("traces", nlohmann::json::object());
      for (const auto& [rank, path] : files.items())
        traces.insert(path.get<std::string>());
      if (traces == wanted) return run.absoluteFilePath();
    } catch (const std::exception&) {
      // not a run, or one being written: not a match
    }
  }
  return {};
}

QString importTargetFor(const QStringList& inputs, const QString& workspace) {
  QString name = inputs.isEmpty() ? QStringLiteral("traces") : QFileInfo(inputs.first()).fileName();
  if (name.isEmpty()) name = QDir(inputs.first()).dirName();  // "traces/"
  // Several files (one per rank): the job is their folder.
  if (inputs.size() > 1 && QFileInfo(inputs.first()).isFile()) name = QFileInfo(inputs.first()).dir().dirName();
  for (const char* suffix : {".gz", ".json", ".pt.trace"}) {
    if (name.endsWith(QLatin1String(suffix), Qt::CaseInsensitive)) name.chop(static_cast<int>(strlen(suffix)));
  }
  if (name.isEmpty()) name = QStringLiteral("traces");
  const QDir dir(workspace);
  QString path = dir.filePath(name + QStringLiteral(".ddprun"));
  for (int k = 2; QFileInfo::exists(path); ++k)
    path = dir.filePath(QStringLiteral("%1-%2.ddprun").arg(name).arg(k));
  return path;
}

}  // namespace ddpscope::gui
