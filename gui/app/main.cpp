// ddpscope: the desktop app. `ddpscope` lists the runs of the workspace folder;
// `ddpscope RUN_FILE` opens a run.
#include <QApplication>
#include <QCommandLineParser>
#include <QTabWidget>
#include <QTimer>
#include <cstdio>

#include "main_window.h"
#include "run_workspace.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("ddpscope"));
  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral("ddpscope: distributed training debugger"));
  parser.addHelpOption();
  parser.addPositionalArgument(QStringLiteral("run"), QStringLiteral("A run file to open"),
                               QStringLiteral("[RUN_FILE]"));
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("Save the window as a PNG once shown, then quit (for docs and checks)"),
      QStringLiteral("PNG"));
  const QCommandLineOption tab(QStringLiteral("tab"),
                               QStringLiteral("Tab to show: Summary, Overlap or Buckets"),
                               QStringLiteral("NAME"));
  parser.addOption(screenshot);
  parser.addOption(tab);
  parser.process(app);
  QString workspace;
  try {
    workspace = QString::fromStdString(ddpscope::probes::workspace_folder());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
  ddpscope::gui::MainWindow window(workspace);
  if (!parser.positionalArguments().isEmpty()) {
    const QString path = parser.positionalArguments().first();
    if (!window.openRun(path)) {
      std::fprintf(stderr, "error: cannot open %s\n", qPrintable(path));
    }
  }
  if (parser.isSet(tab)) {
    for (int i = 0; i < window.tabs()->count(); ++i) {
      if (window.tabs()->tabText(i).compare(parser.value(tab), Qt::CaseInsensitive) == 0)
        window.tabs()->setCurrentIndex(i);
    }
  }
  window.show();
  if (parser.isSet(screenshot)) {
    QTimer::singleShot(500, &window, [&] {
      const bool saved = window.grab().save(parser.value(screenshot));
      std::fprintf(saved ? stdout : stderr, "%s %s\n", saved ? "saved" : "error: cannot write",
                   qPrintable(parser.value(screenshot)));
      QApplication::exit(saved ? 0 : 1);
    });
  }
  return app.exec();
}
