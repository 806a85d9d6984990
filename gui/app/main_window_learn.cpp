// The Learn menu and links to a lesson's step: the lessons shipped, a lesson file of a
// teacher's own, the open run replayed, and "Copy link to this step" / opening a link
// (lesson_link.h), so a step can be shared as a link.
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QStatusBar>

#include "classroom_controller.h"
#include "learn_page.h"
#include "lesson_catalog.h"
#include "lesson_file.h"
#include "lesson_link.h"
#include "main_window.h"

namespace ddpscope::gui {

void MainWindow::buildLearnMenu() {
  QMenu* learn = menuBar()->addMenu(tr("L&earn"));
  for (size_t i = 0; i < lessons().size(); ++i)
    learn->addAction(QStringLiteral("&") + lessonMenuTitle(i), this, [this, i] {
      m_learn->openLessonInBackground(static_cast<int>(i));
      showTab(QStringLiteral("learn"));
      m_learn->setFocus();
    });
  learn->addSeparator();
  learn->addAction(tr("Open a lesson &file..."), this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, tr("Open a lesson file"), m_session->workspace(),
                                                      tr("Lessons (*.ddplesson);;All files (*)"));
    if (!file.isEmpty()) openLessonFile(file);
  });
  learn->addAction(tr("Replay the &open run"), this, [this] {
    QString error;
    const auto& run = m_session->run();
    if (!run || !m_learn->openRun(QString::fromStdString(run->path), &error)) {
      statusBar()->showMessage(run ? error : tr("Open a run first"));
      return;
    }
    showTab(QStringLiteral("learn"));
  });
  learn->addSeparator();
  learn->addAction(tr("&Copy link to this step"), m_learn, [this] { m_learn->copyLinkToStep(); })
      ->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+C")));
  m_classroom->addActions(learn);
}

bool MainWindow::openLesson(int index) {
  QString error;
  if (!m_learn->openLesson(index, &error)) {
    statusBar()->showMessage(error);
    return false;
  }
  showTab(QStringLiteral("learn"));
  m_learn->setFocus();
  return true;
}

bool MainWindow::openLessonFile(const QString& path) {
  QString error;
  if (!m_learn->openLessonFile(path, &error)) {
    emit loadFailed(tr("Cannot open the lesson: %1").arg(error));
    return false;
  }
  showTab(QStringLiteral("learn"));
  m_learn->setFocus();
  return true;
}

bool MainWindow::openLink(const QString& text, QString* error) {
  const std::optional<LessonLink> link = LessonLink::parse(text, static_cast<int>(lessons().size()), error);
  if (!link) return false;
  if (!m_learn->openLink(*link, error)) return false;
  showTab(QStringLiteral("learn"));
  m_learn->setFocus();
  statusBar()->showMessage(tr("Opened %1").arg(text.trimmed()));
  return true;
}

}  // namespace ddpscope::gui
