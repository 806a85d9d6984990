// LessonLiveRecorder: "Run live" on the Learn page. It re-records a lesson of the menu
// with the student's parameters through ddpscope-cli (the lesson's example, or `train`
// for the DDP lessons) in a process of its own, into a new run file in the workspace, and
// says when that process ends. One recording at a time; a recording still going when the
// recorder is destroyed (the app closing) is killed.
#pragma once

#include <QObject>
#include <QString>

#include "lesson_catalog.h"

class QProcess;

namespace ddpscope::gui {

class LessonLiveRecorder : public QObject {
  Q_OBJECT

 public:
  // `workspace`: where recordings go; `cli`: ddpscope-cli (empty: none, nothing records).
  LessonLiveRecorder(const QString& workspace, const QString& cli, QObject* parent = nullptr);
  ~LessonLiveRecorder() override;
  bool available() const { return !m_cli.isEmpty(); }
  bool isRecording() const;
  // Starts recording `lesson`; false with *error when it cannot (no CLI, one still going).
  bool start(const LessonInfo& lesson, const LiveParameters& params, QString* error);

 signals:
  void started(const QString& description);
  // The process ended: `out` holds the run if it got that far; `lastLine`: its last words.
  void finished(const QString& out, int exitCode, const QString& lastLine);

 private:
  QString m_workspace, m_cli;
  QProcess* m_process = nullptr;
};

}  // namespace ddpscope::gui
