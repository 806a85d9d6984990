#include "lesson_live_recorder.h"

#include <QDateTime>
#include <QDir>
#include <QProcess>

#include "plural.h"

namespace ddpscope::gui {

LessonLiveRecorder::LessonLiveRecorder(const QString& workspace, const QString& cli, QObject* parent)
    : QObject(parent), m_workspace(workspace), m_cli(cli) {}

LessonLiveRecorder::~LessonLiveRecorder() {
  if (isRecording()) {
    m_process->kill();
    m_process->waitForFinished(3000);
  }
}

bool LessonLiveRecorder::isRecording() const { return m_process && m_process->state() != QProcess::NotRunning; }

bool LessonLiveRecorder::start(const LessonInfo& lesson, const LiveParameters& params, QString* error) {
  if (m_cli.isEmpty()) {
    *error = tr("ddpscope-cli was not found next to the app or on PATH; set DDPSCOPE_CLI");
    return false;
  }
  if (isRecording()) {
    *error = tr("A live run of this lesson is still going");
    return false;
  }
  QDir().mkpath(m_workspace);
  const QString variant = liveVariant(lesson, params);
  const QString out = QDir(m_workspace)
                          .filePath(QStringLiteral("lesson-%1-%2-np%3-%4.ddprun")
                                        .arg(lesson.example, variant)
                                        .arg(params.workers)
                                        .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss"))));
  delete m_process;
  m_process = new QProcess(this);
  m_process->setProcessChannelMode(QProcess::MergedChannels);
  connect(m_process, &QProcess::finished, this, [this, out](int code, QProcess::ExitStatus) {
    const QString log = QString::fromUtf8(m_process->readAll()).trimmed();
    emit finished(out, code, log.section('\n', -1));
  });
  // A CLI that cannot start never finishes: say so, or the page waits for ever.
  connect(m_process, &QProcess::errorOccurred, this, [this, out](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart) return;
    emit finished(out, -1, tr("cannot start %1: %2").arg(m_cli, m_process->errorString()));
  });
  emit started(
      tr("Recording %1 on %2 (%3)...").arg(lesson.example).arg(countOf(params.workers, tr("worker"))).arg(variant));
  m_process->start(m_cli, liveArguments(lesson, params, out));
  return true;
}

}  // namespace ddpscope::gui
