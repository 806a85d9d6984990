#include "run_open_job.h"

#include "user_message.h"

namespace ddpscope::gui {

RunOpenJob::RunOpenJob(QObject* parent)
    : QObject(parent), m_load(this, [this](Result r) { onFinished(std::move(r)); }) {}

RunOpenJob::~RunOpenJob() = default;

void RunOpenJob::open(const QString& path) {
  m_path = path;
  emit started(path);
  m_load.load([path = path.toStdString()] {
    Result r;
    try {
      r.run = std::make_shared<const RunData>(loadRun(path));
    } catch (const std::exception& e) {
      r.error = userMessage(e);
    }
    return r;
  });
}

void RunOpenJob::cancel() {
  m_path.clear();
  m_load.cancel();
}

void RunOpenJob::onFinished(Result r) {
  const QString path = m_path;
  m_path.clear();
  if (r.run) {
    emit opened(path, r.run);
  } else {
    emit failed(path, r.error);
  }
}

}  // namespace ddpscope::gui
