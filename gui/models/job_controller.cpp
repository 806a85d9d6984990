#include "job_controller.h"

#include <signal.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

namespace ddpscope::gui {
namespace {

QString findCli() {
  const QString env = qEnvironmentVariable("DDPSCOPE_CLI");
  if (!env.isEmpty()) return env;
  const QString sibling = QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("ddpscope-cli"));
  if (QFileInfo(sibling).isExecutable()) return sibling;
  return QStandardPaths::findExecutable(QStringLiteral("ddpscope-cli"));
}

}  // namespace

JobController::JobController(QObject* parent, QString cliPath)
    : QObject(parent), m_cli(cliPath.isEmpty() ? findCli() : std::move(cliPath)) {
  m_killTimer.setSingleShot(true);
  connect(&m_killTimer, &QTimer::timeout, this, [this] {
    if (m_process && m_process->state() != QProcess::NotRunning) {
      emit outputLine(tr("the job did not stop in time: killing it"));
      // The CLI kills mpirun and every rank when it gets a second signal.
      ::kill(static_cast<pid_t>(m_process->processId()), SIGTERM);
      QTimer::singleShot(3000, this, [this] {
        if (m_process && m_process->state() != QProcess::NotRunning) m_process->kill();
      });
    }
  });
}

JobController::~JobController() {
  if (m_process && m_process->state() != QProcess::NotRunning) {
    // Leaving the app ends its job: no ranks left behind.
    ::kill(static_cast<pid_t>(m_process->processId()), SIGTERM);
    if (!m_process->waitForFinished(10000)) m_process->kill();
    m_process->waitForFinished(3000);
  }
}

QString JobController::checkArguments(const LaunchConfig& config, const QString& runFile) const {
  if (m_cli.isEmpty() || !QFileInfo(m_cli).isExecutable())
    return tr("ddpscope-cli was not found next to the app or on PATH; set DDPSCOPE_CLI");
  // A dry parse of the very arguments the job gets (extra arguments included): a bad one
  // is refused here in the CLI's own words, before any process starts.
  QProcess check;
  check.start(m_cli, trainArguments(config, runFile, true));
  if (!check.waitForFinished(kCheckTimeoutMs)) {
    check.kill();
    check.waitForFinished();
    return tr("checking the job's options took more than %1 s").arg(kCheckTimeoutMs / 1000);
  }
  if (check.exitStatus() == QProcess::NormalExit && check.exitCode() == 0) return {};
  QString why = QString::fromUtf8(check.readAllStandardError()).trimmed();
  if (why.startsWith(QLatin1String("error:"))) why = why.mid(6).trimmed();
  why.replace(QLatin1Char('\n'), QLatin1Char(' '));
  return why.isEmpty() ? tr("ddpscope-cli refused the options (exit code %1)").arg(check.exitCode()) : why;
}

bool JobController::start(const LaunchConfig& config, const QString& runFile, QString* error) {
  if (isActive()) {
    *error = tr("a job is already running; stop it first");
    return false;
  }
  const auto problems = validate(config);
  if (!problems.isEmpty()) {
    *error = tr("%1: %2").arg(problems.firstKey(), problems.first());
    return false;
  }
  if (const QString refused = checkArguments(config, runFile); !refused.isEmpty()) {
    *error = refused;
    return false;
  }
  m_total = config.job == QLatin1String("torch") ? 0 : config.iterations;  // a script's is not known
  m_collecting = false;
  return launch(trainArguments(config, runFile), config.probes ? runFile : QString(), error);
}

bool JobController::startCollect(const QString& runFile, const QString& listen, int expect, QString* error) {
  if (isActive()) {
    *error = tr("a job is already running; stop it first");
    return false;
  }
  if (m_cli.isEmpty() || !QFileInfo(m_cli).isExecutable()) {
    *error = tr("ddpscope-cli was not found next to the app or on PATH; set DDPSCOPE_CLI");
    return false;
  }
  QStringList args = {
      QStringLiteral("collect"),    QStringLiteral("--out"), runFile, QStringLiteral("--listen"), listen,
      QStringLiteral("--progress"), QStringLiteral("json")};
  if (expect > 0) args << QStringLiteral("--expect") << QString::number(expect);
  m_total = 0;
  m_collecting = true;
  return launch(args, runFile, error);
}

bool JobController::launch(const QStringList& arguments, const QString& runFile, QString* error) {
  delete m_process;
  m_process = new QProcess(this);
  m_pending[0].clear();
  m_pending[1].clear();
  m_iteration = 0;
  m_failedRank = -1;
  m_message.clear();
  m_lastError.clear();
  m_stderrTail.clear();
  m_stopRequested = false;
  m_runFile = runFile;
  connect(m_process, &QProcess::readyReadStandardOutput, this, [this] { readOutput(QProcess::StandardOutput); });
  connect(m_process, &QProcess::readyReadStandardError, this, [this] { readOutput(QProcess::StandardError); });
  connect(m_process, &QProcess::finished, this, &JobController::onFinished);
  m_process->start(m_cli, arguments);
  if (!m_process->waitForStarted(10000)) {
    *error = tr("cannot start %1: %2").arg(m_cli, m_process->errorString());
    return false;
  }
  m_clock.start();
  m_state = State::Running;
  return true;
}

void JobController::stop(int graceMs) {
  if (m_state != State::Running || !m_process) return;
  m_state = State::Stopping;
  m_stopRequested = true;
  ::kill(static_cast<pid_t>(m_process->processId()), SIGTERM);
  m_killTimer.start(graceMs);
}

void JobController::readOutput(QProcess::ProcessChannel channel) {
  const int i = channel == QProcess::StandardOutput ? 0 : 1;
  m_process->setReadChannel(channel);
  m_pending[i] += m_process->readAll();
  qsizetype nl;
  while ((nl = m_pending[i].indexOf('\n')) >= 0) {
    const QString line = QString::fromUtf8(m_pending[i].left(nl)).trimmed();
    m_pending[i].remove(0, nl + 1);
    if (!line.isEmpty()) handleLine(line, i == 1);
  }
}

void JobController::handleLine(const QString& line, bool fromStderr) {
  const auto event = probes::job_events::parse_line(line.toStdString());
  if (!event) {
    if (fromStderr && line.startsWith(QLatin1String("error:"))) m_lastError = line.mid(6).trimmed();
    // The last lines the job wrote to stderr: what a failure without an 'error:' line
    // (an argument parser's complaint, mpirun's) shows the user.
    if (fromStderr && !line.trimmed().isEmpty()) {
      m_stderrTail << line.trimmed();
      if (m_stderrTail.size() > kStderrTailLines) m_stderrTail.removeFirst();
    }
    emit outputLine(line);
    return;
  }
  handleEvent(*event);
}

// What the CLI says of the job (job_events.h). The launcher's own events (collector, a rank's
// error or end) never reach the app: the CLI turns them into these.
void JobController::handleEvent(const probes::job_events::Event& event) {
  namespace ev = probes::job_events;
  if (const auto* start = std::get_if<ev::Start>(&event)) {
    emit started(m_runFile, QString::fromStdString(start->describe));
  } else if (const auto* p = std::get_if<ev::Progress>(&event)) {
    m_iteration = static_cast<int>(p->iter);
    if (p->total >= 0) m_total = static_cast<int>(p->total);
    // A PyTorch script says no total, and no loss unless it logs one (ddpscope.log).
    emit progress(m_iteration, m_total, p->loss.value_or(0.0), p->samples_per_s, p->loss.has_value());
  } else if (const auto* collect = std::get_if<ev::Collect>(&event)) {
    QStringList exports;
    for (const std::string& e : collect->exports)
      exports << QString::fromStdString(e);
    emit collecting(exports, QString::fromStdString(collect->prefix));
  } else if (const auto* ranks = std::get_if<ev::Ranks>(&event)) {
    emit ranksChanged(static_cast<int>(ranks->joined), static_cast<int>(ranks->ended));
  } else if (const auto* failed = std::get_if<ev::Failed>(&event)) {
    m_failedRank = failed->rank;
    m_message = QString::fromStdString(failed->message);
  }
}

void JobController::onFinished(int exitCode, QProcess::ExitStatus status) {
  m_killTimer.stop();
  for (auto channel : {QProcess::StandardOutput, QProcess::StandardError})
    readOutput(channel);
  if (m_stopRequested) {
    m_state = State::Stopped;
    m_message = tr("stopped");
  } else if (status == QProcess::NormalExit && exitCode == 0) {
    m_state = State::Finished;
  } else {
    m_state = State::Failed;
    if (m_failedRank >= 0) {
      m_message = tr("rank %1 failed: %2").arg(m_failedRank).arg(m_message);
    } else if (!m_lastError.isEmpty()) {
      m_message = m_lastError;
    } else if (m_message.isEmpty()) {
      m_message =
          status == QProcess::CrashExit ? tr("ddpscope-cli crashed") : tr("the job exited with code %1").arg(exitCode);
      if (!m_stderrTail.isEmpty()) m_message += QStringLiteral(": ") + m_stderrTail.join(QLatin1Char(' '));
    }
  }
  emit finished(m_state, m_message);
}

}  // namespace ddpscope::gui
