// JobController: runs one training job for the desktop app. It starts
// `ddpscope-cli train --np N ... --progress json`, which starts the collector and the
// ranks under mpirun, and follows its "@ddpscope {json}" lines: progress, the end, the
// failed rank. Stop asks politely (SIGTERM, which the CLI forwards to every rank), then
// forcibly after a grace period. Never blocks the event loop.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QProcess>
#include <QTimer>

#include "job_events.h"
#include "launch_config.h"

namespace ddpscope::gui {

class JobController : public QObject {
  Q_OBJECT

 public:
  enum class State { Idle, Running, Stopping, Finished, Failed, Stopped };
  Q_ENUM(State)

  // cliPath empty: $DDPSCOPE_CLI, else ddpscope-cli next to this program, else on PATH.
  explicit JobController(QObject* parent = nullptr, QString cliPath = {});
  ~JobController() override;

  // Starts the job writing `runFile`; false with *error when it cannot start (invalid
  // config, a job already running, no ddpscope-cli).
  bool start(const LaunchConfig& config, const QString& runFile, QString* error);
  // Starts `ddpscope-cli collect`: a collector alone, for a job another launcher starts.
  // listen: HOST or HOST:PORT; expect: stop once this many ranks ended (0: at stop()).
  // collecting() says what the job needs once it listens.
  bool startCollect(const QString& runFile, const QString& listen, int expect, QString* error);
  bool isCollecting() const { return isActive() && m_collecting; }
  // The latest job is (or was) a collection, running or ended.
  bool lastWasCollection() const { return m_collecting; }
  // What ddpscope-cli says is wrong with the job's arguments (a dry run with --check), in
  // its own words; empty when it would start. start() checks this first.
  QString checkArguments(const LaunchConfig& config, const QString& runFile) const;
  // SIGTERM now, SIGKILL after `graceMs` if the job is still there.
  void stop(int graceMs = 10000);

  State state() const { return m_state; }
  bool isActive() const { return m_state == State::Running || m_state == State::Stopping; }
  QString runFile() const { return m_runFile; }
  int iteration() const { return m_iteration; }
  int totalIterations() const { return m_total; }
  int failedRank() const { return m_failedRank; }
  QString message() const { return m_message; }
  QString cliPath() const { return m_cli; }
  qint64 elapsedMs() const { return m_clock.isValid() ? m_clock.elapsed() : 0; }

  // One line of the job's output, as it arrives: an event of job_events.h is acted on (the
  // signals below), any other line is the job's own (outputLine; stderr's last lines make
  // a failure's message when no rank names one).
  void handleLine(const QString& line, bool fromStderr);

 signals:
  void started(const QString& runFile, const QString& description);
  // total 0: not known (a PyTorch script); hasLoss false: the job says no loss.
  void progress(int iteration, int total, double loss, double samplesPerSecond, bool hasLoss);
  // state: Finished, Failed or Stopped; message says why for the last two.
  void finished(ddpscope::gui::JobController::State state, const QString& message);
  void outputLine(const QString& line);  // the job's other output, for a log
  // A collector listens: the job's environment as `export` lines, and as one prefix.
  void collecting(const QStringList& exports, const QString& prefix);
  void ranksChanged(int joined, int ended);  // a collector's ranks so far

 private:
  bool launch(const QStringList& arguments, const QString& runFile, QString* error);
  void readOutput(QProcess::ProcessChannel channel);
  void handleEvent(const probes::job_events::Event& event);
  void onFinished(int exitCode, QProcess::ExitStatus status);

  QString m_cli;
  QProcess* m_process = nullptr;
  QTimer m_killTimer;
  QElapsedTimer m_clock;
  State m_state = State::Idle;
  QString m_runFile;
  int m_iteration = 0, m_total = 0, m_failedRank = -1;
  bool m_stopRequested = false;
  bool m_collecting = false;  // the process is `ddpscope-cli collect`
  QString m_message, m_lastError;
  static constexpr int kStderrTailLines = 4;
  static constexpr int kCheckTimeoutMs = 20000;
  QStringList m_stderrTail;
  QByteArray m_pending[2];  // partial lines of stdout and stderr
};

}  // namespace ddpscope::gui
