#include "run_open_job.h"

#include <QtConcurrent/QtConcurrentRun>

#include "user_message.h"

namespace ddpscope::gui {

RunOpenJob::RunOpenJob(QObject* parent) : QObject(parent) {
  connect(&m_watcher, &QFutureWatcher<Result>::finished, this, &RunOpenJob::onFinished);
}

RunOpenJob::~RunOpenJob() { m_watcher.waitForFinished(); }

void RunOpenJob::open(const QString& path) {
  m_path = path;
  emit started(path);
  if (!m_watcher.isRunning()) start();  // else the running load's end starts this one
}

void RunOpenJob::cancel() { m_path.clear(); }

void RunOpenJob::start() {
  m_loading = m_path;
  m_watcher.setFuture(QtConcurrent::run([path = m_loading.toStdString()] {
    Result r;
    try {
      r.run = std::make_shared<const RunData>(loadRun(path));
    } catch (const std::exception& e) {
      r.error = userMessage(e);
    }
    return r;
  }));
}

void RunOpenJob::onFinished() {
  const Result r = m_watcher.result();
  if (m_path.isEmpty()) return;  // cancelled
  if (m_loading != m_path) {     // the user asked for another file meanwhile
    start();
    return;
  }
  const QString path = m_path;
  m_path.clear();
  if (r.run) {
    emit opened(path, r.run);
  } else {
    emit failed(path, r.error);
  }
}

}  // namespace ddpscope::gui
