// For the lesson-file and link tests: the shipped lessons' folder, ddpscope-cli run to its
// end, and what a student sees of the lesson shown (which one, where, how).
#pragma once

#include <QtTest/QtTest>

#include <sys/stat.h>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QTemporaryDir>
#include "graph_view.h"
#include "learn_page.h"
#include "lesson_player.h"
#include "lesson_catalog.h"
#include "lesson_file.h"
#include "lesson_link.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"

namespace ddpscope::gui::lesson_links_fixture {

using namespace ddpscope::gui;
using ddpscope::probes::LessonFile;

inline const QString kLessons = QStringLiteral(DDPSCOPE_LESSONS_DIR);

struct Cli {
  int code = -1;
  QString out;
};

inline Cli runCli(const QStringList& args) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(QStringLiteral(DDPSCOPE_CLI_PATH), args);
  p.waitForFinished(60000);
  return {p.exitCode(), QString::fromUtf8(p.readAll())};
}

// What a student sees of the lesson: which one, where, and how it is shown.
struct Seen {
  QString box;
  size_t applied = 0;
  bool side = false, predict = false;
  double zoom = 0;
  QString explanation;
};

inline Seen seen(MainWindow& w) {
  LearnPage* p = w.part<LearnPage>();
  return {p->lessonBox()->currentText(), p->applied(),       p->sideBySideBox()->isChecked(),
          p->predictBox()->isChecked(),  p->graph()->zoom(), p->explanation()->text()};
}

// What the tests of this fixture share.
class LessonLinksTest : public QObject {
 protected:
};

}  // namespace ddpscope::gui::lesson_links_fixture
