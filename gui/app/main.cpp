// ddpscope: the desktop app. `ddpscope` lists the runs of the workspace folder;
// `ddpscope RUN_FILE` opens a run (`ddpscope TRACES/` imports a PyTorch job's traces first); `ddpscope --demo` launches
// the 2-rank demo job and follows it live; `ddpscope --launch PRESET.json` launches a saved preset; `ddpscope --lesson
// N [--step K]` opens a lesson of the Learn menu; `ddpscope --follow RUN_FILE` follows a run that `ddpscope-cli
// collect` writes as it grows.
#include <QApplication>
#include <memory>
#include <optional>
#include <string>
#include <algorithm>
#include <QCheckBox>
#include <QPushButton>
#include <QSpinBox>
#include <QDialog>
#include <QPainter>
#include <QCommandLineParser>
#include <QLabel>
#include <QLineEdit>
#include <QUrl>
#include <QTimer>
#include <cstdio>

#include "job_controller.h"
#include "learn_page.h"
#include "classroom.h"
#include "classroom_controller.h"
#include "collect_dialog.h"
#include "main_window.h"
#include "timeline_page.h"
#include "timeline_view.h"
#include "trace_import_job.h"
#include "run_workspace.h"

namespace {

// The demo of README command 1: the character transformer, 2 ranks, DDP.
ddpscope::gui::LaunchConfig demoConfig() {
  ddpscope::gui::LaunchConfig c;
  c.model = QStringLiteral("transformer");
  c.worldSize = 2;
  c.iterations = 300;
  c.batch = 16;
  c.width = 64;
  c.depth = 2;
  // Small buckets so the transformer's 0.4 MiB of gradients make 4 buckets whose
  // allreduces overlap backward (one 25 MiB bucket gave an overlap ratio near 0.08).
  c.bucketCapMb = 0.1;
  c.firstBucketCapMb = 0.05;
  return c;
}

// The app's command line.
struct AppOptions {
  QCommandLineOption screenshot{
      QStringLiteral("screenshot"),
      QStringLiteral("Save the window as a PNG once shown (after a launched job ends), then quit"),
      QStringLiteral("PNG")};
  QCommandLineOption tab{
      QStringLiteral("tab"),
      QStringLiteral("Tab to show: Summary, Live, Timeline, Breakdown, Ranks, Overlap, Buckets, Graph, "
                     "Messages, Hang, Links, Compare or Learn"),
      QStringLiteral("NAME")};
  QCommandLineOption demo{QStringLiteral("demo"), QStringLiteral("Launch the 2-rank transformer demo and follow it")};
  QCommandLineOption launch{QStringLiteral("launch"), QStringLiteral("Launch the job of a preset file and follow it"),
                            QStringLiteral("PRESET")};
  QCommandLineOption lesson{QStringLiteral("lesson"), QStringLiteral("Open lesson N of the Learn menu (1-based)"),
                            QStringLiteral("N")};
  QCommandLineOption step{QStringLiteral("step"),
                          QStringLiteral("With --lesson: show the state after this many steps; with --join: take this "
                                         "many steps on your own once the teacher's step is shown"),
                          QStringLiteral("K")};
  QCommandLineOption sideBySide{QStringLiteral("side-by-side"),
                                QStringLiteral("With --lesson: show the paired lesson beside it (lesson 2)")};
  QCommandLineOption find{QStringLiteral("find"),
                          QStringLiteral("Timeline: search for TEXT and select the first match (its details shown)"),
                          QStringLiteral("TEXT")};
  QCommandLineOption range{QStringLiteral("range"),
                           QStringLiteral("Timeline: select the range A:B, in ms from the run's start"),
                           QStringLiteral("A:B")};
  QCommandLineOption iteration{QStringLiteral("iteration"), QStringLiteral("Timeline: show iteration N of rank 0"),
                               QStringLiteral("N")};
  QCommandLineOption compare{QStringLiteral("compare"),
                             QStringLiteral("Compare the run opened (A) with this one (B) on the Compare tab"),
                             QStringLiteral("RUN_FILE")};
  QCommandLineOption openLink{
      QStringLiteral("open-link"),
      QStringLiteral("Open a link to a lesson's step (ddpscope:learn?..., from Learn > Copy link to this step)"),
      QStringLiteral("LINK")};
  QCommandLineOption teach{QStringLiteral("teach"),
                           QStringLiteral("Teach a class: listen for students on [HOST:]PORT (HOST: the "
                                          "interface, every one when left out; PORT 0: any free port)"),
                           QStringLiteral("[HOST:]PORT")};
  QCommandLineOption join{QStringLiteral("join"),
                          QStringLiteral("Join the class at HOST:PORT (with --code; the teacher's screen shows both)"),
                          QStringLiteral("HOST:PORT")};
  QCommandLineOption code{QStringLiteral("code"), QStringLiteral("With --join: the class's join code"),
                          QStringLiteral("CODE")};
  QCommandLineOption name{QStringLiteral("name"), QStringLiteral("With --join: your name, as the teacher sees it"),
                          QStringLiteral("NAME")};
  QCommandLineOption follow{
      QStringLiteral("follow"),
      QStringLiteral("Follow a run file another process writes (ddpscope-cli collect) as it grows"),
      QStringLiteral("RUN_FILE")};
  QCommandLineOption collect{
      QStringLiteral("collect"),
      QStringLiteral("Run > Collect from a job..., started: a collector on 127.0.0.1 that stops once RANKS ranks have "
                     "ended (0: when stopped); prints the prefix for the job's launcher"),
      QStringLiteral("RANKS")};
  QCommandLineOption size{
      QStringLiteral("size"),
      QStringLiteral("With --screenshot: the window's size (default 1600x1000; a laptop: 1280x800)"),
      QStringLiteral("WxH")};
  QCommandLineParser parser;

  explicit AppOptions(const QApplication& app) {
    parser.setApplicationDescription(QStringLiteral("ddpscope: distributed training debugger"));
    parser.addHelpOption();
    parser.addPositionalArgument(QStringLiteral("run"),
                                 QStringLiteral("A run file to open, a lesson file (*.ddplesson), a ddpscope: link, or "
                                                "a PyTorch job's profiler traces (a folder, or *.json / *.json.gz "
                                                "files, one per rank) to import and open"),
                                 QStringLiteral("[RUN_FILE | TRACES...]"));
    parser.addOptions({screenshot, size, tab, demo, launch, lesson, step, sideBySide, find, range, iteration, compare,
                       openLink, join, code, name, teach, follow, collect});
    parser.process(app);
  }
  bool isSet(const QCommandLineOption& o) const { return parser.isSet(o); }
  QString value(const QCommandLineOption& o) const { return parser.value(o); }
  bool framesTimeline() const { return isSet(find) || isSet(range) || isSet(iteration); }
};

// A run file, a lesson file, a link, or one trace per rank to import. The desktop entry
// passes file:// URLs (Exec=ddpscope %U): they are opened as the files they name.
void openPaths(ddpscope::gui::MainWindow& window, QStringList paths) {
  for (QString& p : paths) {
    if (p.startsWith(QLatin1String("file:"), Qt::CaseInsensitive)) p = QUrl(p).toLocalFile();
  }
  if (paths.size() > 1) {
    window.importTraces(paths);
  } else if (!paths.isEmpty() && !window.openPath(paths.first())) {
    std::fprintf(stderr, "error: cannot open %s\n", qPrintable(paths.first()));
  }
  if (window.part<ddpscope::gui::TraceImportJob>()->isRunning()) {
    QObject::connect(window.part<ddpscope::gui::TraceImportJob>(), &ddpscope::gui::TraceImportJob::failed, &window,
                     [](const QString& message, bool) { std::fprintf(stderr, "error: %s\n", qPrintable(message)); });
  }
}

// --demo or --launch PRESET. False when the job cannot start (said on stderr).
bool launchAsked(ddpscope::gui::MainWindow& window, const AppOptions& o) {
  ddpscope::gui::LaunchConfig config = demoConfig();
  QString error;
  if (o.isSet(o.launch) && !ddpscope::gui::loadPreset(o.value(o.launch), &config, &error)) {
    std::fprintf(stderr, "error: %s\n", qPrintable(error));
    return false;
  }
  if (!window.launchJob(config, &error)) {
    std::fprintf(stderr, "error: cannot launch the job: %s\n", qPrintable(error));
    return false;
  }
  std::printf("run file: %s\n", qPrintable(window.part<ddpscope::gui::JobController>()->runFile()));
  std::fflush(stdout);
  return true;
}

// --follow RUN_FILE, when given; false when it cannot be followed (said on stderr).
bool followAsked(ddpscope::gui::MainWindow& window, const AppOptions& o) {
  QString error;
  if (!o.isSet(o.follow) || window.followRunFile(o.value(o.follow), &error)) return true;
  std::fprintf(stderr, "error: --follow: %s\n", qPrintable(error));
  return false;
}

// --collect RANKS: the Collect dialog, collecting; the prefix printed once it listens
// ("collect: env ..."), for a script that starts the job. False when it cannot start.
bool collectAsked(ddpscope::gui::MainWindow& window, const AppOptions& o) {
  bool ok = false;
  const int ranks = o.value(o.collect).toInt(&ok);
  if (!ok || ranks < 0 || ranks > (1 << 20)) {
    std::fprintf(stderr, "error: --collect: RANKS must be a whole number from 0 (collect until stopped) to 1048576\n");
    return false;
  }
  QObject::connect(window.part<ddpscope::gui::JobController>(), &ddpscope::gui::JobController::collecting, &window,
                   [](const QStringList&, const QString& prefix) {
                     std::printf("collect: %s\n", qPrintable(prefix));
                     std::fflush(stdout);
                   });
  window.showCollectDialog();
  window.collectDialog()->expectBox()->setValue(ranks);
  window.collectDialog()->startButton()->click();  // as a user would: the dialog shows what follows
  if (window.collectDialog()->isCollecting()) return true;
  std::fprintf(stderr, "error: --collect: %s\n", qPrintable(window.collectDialog()->statusLabel()->text()));
  return false;
}

// --lesson N [--step K] [--side-by-side]. False when there is no such lesson.
bool openLessonAsked(ddpscope::gui::MainWindow& window, const AppOptions& o) {
  if (!window.openLesson(o.value(o.lesson).toInt() - 1)) {
    std::fprintf(stderr, "error: cannot open lesson %s\n", qPrintable(o.value(o.lesson)));
    return false;
  }
  if (o.isSet(o.sideBySide)) window.part<ddpscope::gui::LearnPage>()->sideBySideBox()->setChecked(true);
  for (int k = o.value(o.step).toInt(); k > 0; --k)
    window.part<ddpscope::gui::LearnPage>()->stepForward();
  return true;
}

// Frames the timeline as asked (after its tab has loaded the run).
void frameTimeline(ddpscope::gui::MainWindow& window, const AppOptions& o) {
  ddpscope::gui::TimelineView* view = window.part<ddpscope::gui::TimelinePage>()->view();
  if (o.isSet(o.iteration)) {
    const auto& its = view->data().iterations;
    for (size_t i = 0; i < its.size(); ++i)
      if (its[i].number == o.value(o.iteration).toLongLong()) view->showIteration(static_cast<int>(i));
  }
  if (o.isSet(o.range)) {
    const QStringList ab = o.value(o.range).split(':');
    if (ab.size() == 2) {
      const int64_t origin = view->data().begin_ns;
      const int64_t a = origin + static_cast<int64_t>(ab[0].toDouble() * 1e6),
                    b = origin + static_cast<int64_t>(ab[1].toDouble() * 1e6);
      view->showWindow(std::max(origin, a - (b - a) / 4), b + (b - a) / 4);  // the range in view, a margin around
      view->setRange(a, b);
    }
  }
  if (o.isSet(o.find)) {
    window.part<ddpscope::gui::TimelinePage>()->showSearch();
    window.part<ddpscope::gui::TimelinePage>()->searchField()->setText(o.value(o.find));
    window.part<ddpscope::gui::TimelinePage>()->findNext();
  }
}

// --screenshot PNG: saved once the window shows what was asked (a launched job ended, the
// traces imported), then the app quits.
// The window as its user sees it: with its open dialogs (Collect from a job...) drawn where
// they stand over it.
QPixmap windowWithDialogs(ddpscope::gui::MainWindow& window) {
  QPixmap shot = window.grab();
  QPainter painter(&shot);
  for (QWidget* top : QApplication::topLevelWidgets()) {
    if (top == &window || !top->isVisible() || !qobject_cast<QDialog*>(top)) continue;
    painter.drawPixmap(window.mapFromGlobal(top->mapToGlobal(QPoint(0, 0))), top->grab());
  }
  return shot;
}

void scheduleScreenshot(ddpscope::gui::MainWindow& window, const AppOptions& o) {
  auto save = [&window, &o] {
    if (o.isSet(o.tab)) window.showTab(o.value(o.tab));
    QTimer::singleShot(500, &window, [&window, &o] { frameTimeline(window, o); });
    // DDPSCOPE_SCREENSHOT_DELAY_MS: a later shot, for a scene that takes a while to set
    // (a class whose students join).
    const int delay = std::clamp(qEnvironmentVariableIntValue("DDPSCOPE_SCREENSHOT_DELAY_MS"), 0, 60000);
    QTimer::singleShot(delay > 0 ? delay : 900, &window, [&window, &o] {
      const bool saved = windowWithDialogs(window).save(o.value(o.screenshot));
      std::fprintf(saved ? stdout : stderr, "%s %s\n", saved ? "saved" : "error: cannot write",
                   qPrintable(o.value(o.screenshot)));
      QApplication::exit(saved ? 0 : 1);
    });
  };
  if (window.part<ddpscope::gui::JobController>()->isActive() &&
      !window.part<ddpscope::gui::JobController>()->isCollecting()) {
    QObject::connect(window.part<ddpscope::gui::JobController>(), &ddpscope::gui::JobController::finished, &window,
                     save);
  } else if (window.part<ddpscope::gui::TraceImportJob>()->isRunning()) {  // traces: once imported and shown
    QObject::connect(window.part<ddpscope::gui::TraceImportJob>(), &ddpscope::gui::TraceImportJob::finished, &window,
                     save);
    QObject::connect(window.part<ddpscope::gui::TraceImportJob>(), &ddpscope::gui::TraceImportJob::failed, &window,
                     [] { QApplication::exit(1); });
  } else {
    save();
  }
}

}  // namespace

// --join with --step K: once the teacher's step is on screen, K steps on the student's own
// (the class bar then says so, and the teacher's names where this student is).
void stepAwayOnceFollowing(ddpscope::gui::MainWindow& window, int steps) {
  auto* page = window.part<ddpscope::gui::LearnPage>();
  auto once = std::make_shared<QMetaObject::Connection>();
  *once = QObject::connect(page, &ddpscope::gui::LearnPage::linkShown, page, [page, steps, once] {
    QObject::disconnect(*once);
    for (int k = 0; k < steps; ++k)
      page->stepForward();
  });
}

// The value of `option` as given ("--name Ana" or "--name=Ana"), read before Qt sees the
// arguments: its X11 platform takes -name/--name (the X resource name) out of argv, so
// under a real display --join's name never reached the parser (the class saw no name).
std::optional<QString> rawOption(int argc, char** argv, const std::string& option) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == option && i + 1 < argc) return QString::fromLocal8Bit(argv[i + 1]);
    if (a.rfind(option + "=", 0) == 0) return QString::fromLocal8Bit(a.substr(option.size() + 1).c_str());
  }
  return std::nullopt;
}

int main(int argc, char** argv) {
  const std::optional<QString> given_name = rawOption(argc, argv, "--name");
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("ddpscope"));
  QApplication::setDesktopFileName(QStringLiteral("ddpscope"));
  const AppOptions o(app);
  QString workspace;
  try {
    workspace = QString::fromStdString(ddpscope::probes::workspace_folder());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s\n", ddpscope::user_message(e).c_str());
  }
  ddpscope::gui::MainWindow window(workspace);
  openPaths(window, o.parser.positionalArguments());
  if (o.isSet(o.compare) && !window.compareWith(o.value(o.compare))) {
    std::fprintf(stderr, "error: %s\n", qPrintable(window.part<QLabel>("errorBanner")->text()));
    return 2;
  }
  if ((o.isSet(o.demo) || o.isSet(o.launch)) && !launchAsked(window, o)) return 2;
  if (!followAsked(window, o) || (o.isSet(o.collect) && !collectAsked(window, o))) return 2;
  if (o.isSet(o.teach)) {
    // [HOST:]PORT: HOST the interface to listen on (every one without it).
    QString error;
    bool ok = false;
    const QString given = o.value(o.teach);
    const int colon = static_cast<int>(given.lastIndexOf(':'));
    const QHostAddress host(colon > 0 ? given.left(colon) : QStringLiteral("0.0.0.0"));
    const int port = given.mid(colon + 1).toInt(&ok);
    ok = ok && !host.isNull();
    if (!ok || port < 0 || port > 65535 ||
        !window.part<ddpscope::gui::ClassroomController>()->teach(static_cast<quint16>(port), &error, host)) {
      std::fprintf(stderr, "error: --teach: %s\n",
                   qPrintable(ok ? error
                                 : QStringLiteral("[HOST:]PORT is expected: an address of this machine and a port "
                                                  "from 0 to 65535, e.g. 192.168.1.5:5555")));
      return 2;
    }
    std::printf("class: port %d, join code %s\n", window.part<ddpscope::gui::ClassroomController>()->server()->port(),
                qPrintable(window.part<ddpscope::gui::ClassroomController>()->server()->code()));
    std::fflush(stdout);
  }
  if (o.isSet(o.join)) {
    QString error;
    const QString name = o.isSet(o.name) ? o.value(o.name) : given_name.value_or(qEnvironmentVariable("USER"));
    if (!window.part<ddpscope::gui::ClassroomController>()->join(o.value(o.join), o.value(o.code), name, &error)) {
      std::fprintf(stderr, "error: --join: %s\n", qPrintable(error));
      return 2;
    }
    if (o.isSet(o.step)) stepAwayOnceFollowing(window, o.value(o.step).toInt());
  }
  if (o.isSet(o.openLink)) {
    QString error;
    if (!window.openLink(o.value(o.openLink), &error)) {
      std::fprintf(stderr, "error: --open-link: %s\n", qPrintable(error));
      return 2;
    }
  }
  if (o.isSet(o.tab)) window.showTab(o.value(o.tab));
  if (o.isSet(o.lesson) && !openLessonAsked(window, o)) return 2;
  if (o.isSet(o.screenshot)) {
    int w = 1600, h = 1000;  // README's screenshots: room for the panels
    char tail = 0;
    if (o.isSet(o.size) && (std::sscanf(o.value(o.size).toUtf8().constData(), "%dx%d%c", &w, &h, &tail) != 2 ||
                            w < 320 || h < 240 || w > 7680 || h > 4320)) {
      std::fprintf(stderr, "error: --size: expected WIDTHxHEIGHT from 320x240 to 7680x4320 (e.g. 1280x800), got '%s'\n",
                   qPrintable(o.value(o.size)));
      return 2;
    }
    window.resize(w, h);
  }
  window.show();
  if (o.isSet(o.screenshot))
    scheduleScreenshot(window, o);
  else if (o.framesTimeline())
    QTimer::singleShot(300, &window, [&window, &o] { frameTimeline(window, o); });
  return app.exec();
}
