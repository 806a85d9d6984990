// Opening a folder of PyTorch profiler traces in the app, as a user does (File > Open on the
// folder), and waiting for its import to finish: the tests of the views that must say what
// an imported run cannot tell start here.
#pragma once

#include <QSignalSpy>
#include <QString>

#include "main_window.h"
#include "trace_import_job.h"

namespace ddpscope::gui::testing {

// `fixture`: a folder under tests/torch/fixtures. False when the import did not finish in 60 s.
inline bool openTraces(MainWindow& window, const QString& fixture) {
  QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
  return window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/" + fixture) && finished.wait(60000);
}

}  // namespace ddpscope::gui::testing
