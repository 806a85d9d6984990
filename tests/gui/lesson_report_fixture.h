// `ddpscope-cli lesson` run to its end for the lesson-report tests, and runs written for
// them.
#pragma once

#include <QtTest/QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include "lesson_catalog.h"
#include "lesson_kind.h"
#include "lesson_loader.h"
#include "run_store_reader.h"
#include "run_store_writer.h"

namespace ddpscope::gui::lesson_report_fixture {

using namespace ddpscope::gui;
using ddpscope::probes::BatchEvent;
using ddpscope::probes::EventBatch;
using ddpscope::probes::RunStoreReader;
using ddpscope::probes::RunStoreWriter;

struct Ran {
  int status = -1;
  QString out, err;
};

inline Ran cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(DDPSCOPE_CLI_PATH), args);
  Ran r;
  if (!p.waitForFinished(120000)) return r;
  r.status = p.exitCode();
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

inline QJsonObject json(const Ran& r) { return QJsonDocument::fromJson(r.out.toUtf8()).object(); }

inline int ringIndex() {
  for (size_t i = 0; i < lessons().size(); ++i)
    if (lessons()[i].ring) return int(i) + 1;
  return -1;
}

// What the tests of this fixture share.
class LessonReportTest : public QObject {
 protected:
};

}  // namespace ddpscope::gui::lesson_report_fixture
