// ddpscope: the desktop app. `ddpscope` lists the runs of the workspace folder;
// `ddpscope RUN_FILE` opens a run (`ddpscope TRACES/` imports a PyTorch job's traces first); `ddpscope --demo` launches
// the 2-rank demo job and follows it live; `ddpscope --launch PRESET.json` launches a saved preset; `ddpscope --lesson
// N [--step K]` opens a lesson of the Learn menu.
#include <QApplication>
#include <QCheckBox>
#include <QCommandLineParser>
#include <QLineEdit>
#include <QTimer>
#include <cstdio>

#include "job_controller.h"
#include "learn_page.h"
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

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("ddpscope"));
  QApplication::setDesktopFileName(QStringLiteral("ddpscope"));
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("ddpscope: distributed training debugger"));
  parser.addHelpOption();
  parser.addPositionalArgument(QStringLiteral("run"),
                               QStringLiteral("A run file to open, or a PyTorch job's profiler traces (a folder, "
                                              "or *.json / *.json.gz files, one per rank) to import and open"),
                               QStringLiteral("[RUN_FILE | TRACES...]"));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save the window as a PNG once shown (after a launched job ends), then quit"),
      QStringLiteral("PNG"));
  const QCommandLineOption tab(
      QStringLiteral("tab"),
      QStringLiteral(
          "Tab to show: Summary, Live, Timeline, Breakdown, Overlap, Buckets, Graph, Messages, Hang or Learn"),
      QStringLiteral("NAME"));
  const QCommandLineOption demo(QStringLiteral("demo"),
                                QStringLiteral("Launch the 2-rank transformer demo and follow it"));
  const QCommandLineOption launch(QStringLiteral("launch"),
                                  QStringLiteral("Launch the job of a preset file and follow it"),
                                  QStringLiteral("PRESET"));
  const QCommandLineOption lesson(QStringLiteral("lesson"), QStringLiteral("Open lesson N of the Learn menu (1-based)"),
                                  QStringLiteral("N"));
  const QCommandLineOption step(QStringLiteral("step"),
                                QStringLiteral("With --lesson: show the state after this many steps"),
                                QStringLiteral("K"));
  const QCommandLineOption sideBySide(QStringLiteral("side-by-side"),
                                      QStringLiteral("With --lesson: show the paired lesson beside it (lesson 2)"));
  const QCommandLineOption find(
      QStringLiteral("find"),
      QStringLiteral("Timeline: search for TEXT and select the first match (its details shown)"),
      QStringLiteral("TEXT"));
  const QCommandLineOption range(QStringLiteral("range"),
                                 QStringLiteral("Timeline: select the range A:B, in ms from the run's start"),
                                 QStringLiteral("A:B"));
  const QCommandLineOption iteration(QStringLiteral("iteration"),
                                     QStringLiteral("Timeline: show iteration N of rank 0"), QStringLiteral("N"));
  parser.addOptions({screenshot, tab, demo, launch, lesson, step, sideBySide, find, range, iteration});
  parser.process(app);
  QString workspace;
  try {
    workspace = QString::fromStdString(ddpscope::probes::workspace_folder());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
  ddpscope::gui::MainWindow window(workspace);
  const QStringList paths = parser.positionalArguments();
  if (paths.size() > 1) {  // one trace per rank
    window.importTraces(paths);
  } else if (!paths.isEmpty() && !window.openPath(paths.first())) {
    std::fprintf(stderr, "error: cannot open %s\n", qPrintable(paths.first()));
  }
  if (window.traceImport()->isRunning()) {
    QObject::connect(window.traceImport(), &ddpscope::gui::TraceImportJob::failed, &window,
                     [](const QString& message, bool) { std::fprintf(stderr, "error: %s\n", qPrintable(message)); });
  }
  if (parser.isSet(demo) || parser.isSet(launch)) {
    ddpscope::gui::LaunchConfig config = demoConfig();
    QString error;
    if (parser.isSet(launch) && !ddpscope::gui::loadPreset(parser.value(launch), &config, &error)) {
      std::fprintf(stderr, "error: %s\n", qPrintable(error));
      return 2;
    }
    if (!window.launchJob(config, &error)) {
      std::fprintf(stderr, "error: cannot launch the job: %s\n", qPrintable(error));
      return 2;
    }
    std::printf("run file: %s\n", qPrintable(window.job()->runFile()));
    std::fflush(stdout);
  }
  if (parser.isSet(tab)) window.showTab(parser.value(tab));
  if (parser.isSet(lesson)) {
    if (!window.openLesson(parser.value(lesson).toInt() - 1)) {
      std::fprintf(stderr, "error: cannot open lesson %s\n", qPrintable(parser.value(lesson)));
      return 2;
    }
    if (parser.isSet(sideBySide)) window.learnPage()->sideBySideBox()->setChecked(true);
    for (int k = parser.value(step).toInt(); k > 0; --k)
      window.learnPage()->stepForward();
  }
  if (parser.isSet(screenshot)) window.resize(1600, 1000);  // README's screenshots: room for the panels
  window.show();
  // Frames the timeline as asked (after its tab has loaded the run).
  auto frame = [&] {
    ddpscope::gui::TimelineView* view = window.timeline();
    if (parser.isSet(iteration)) {
      const auto& its = view->data().iterations;
      for (size_t i = 0; i < its.size(); ++i)
        if (its[i].number == parser.value(iteration).toLongLong()) view->showIteration(static_cast<int>(i));
    }
    if (parser.isSet(range)) {
      const QStringList ab = parser.value(range).split(':');
      if (ab.size() == 2) {
        const int64_t origin = view->data().begin_ns;
        view->setRange(origin + static_cast<int64_t>(ab[0].toDouble() * 1e6),
                       origin + static_cast<int64_t>(ab[1].toDouble() * 1e6));
      }
    }
    if (parser.isSet(find)) {
      window.timelinePage()->showSearch();
      window.timelinePage()->searchField()->setText(parser.value(find));
      window.timelinePage()->findNext();
    }
  };
  if (!parser.isSet(screenshot) && (parser.isSet(find) || parser.isSet(range) || parser.isSet(iteration)))
    QTimer::singleShot(300, &window, frame);
  if (parser.isSet(screenshot)) {
    auto save = [&] {
      if (parser.isSet(tab)) window.showTab(parser.value(tab));
      QTimer::singleShot(500, &window, frame);
      QTimer::singleShot(900, &window, [&] {
        const bool saved = window.grab().save(parser.value(screenshot));
        std::fprintf(saved ? stdout : stderr, "%s %s\n", saved ? "saved" : "error: cannot write",
                     qPrintable(parser.value(screenshot)));
        QApplication::exit(saved ? 0 : 1);
      });
    };
    if (window.job()->isActive()) {
      QObject::connect(window.job(), &ddpscope::gui::JobController::finished, &window, save);
    } else if (window.traceImport()->isRunning()) {  // traces: once imported and shown
      QObject::connect(window.traceImport(), &ddpscope::gui::TraceImportJob::finished, &window, save);
      QObject::connect(window.traceImport(), &ddpscope::gui::TraceImportJob::failed, &window,
                       [] { QApplication::exit(1); });
    } else {
      save();
    }
  }
  return app.exec();
}
