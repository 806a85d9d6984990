// ErrorBanner: errors (a damaged file, a refused launch) above the views, whole and
// selectable, until the next run opens or the user closes it: a status-bar line was cut
// at the window's edge and replaced by the next message. When the open run's file was
// replaced or deleted on disk it offers Reload and Save a copy.
#pragma once

#include <QWidget>

class QLabel;
class QPushButton;

namespace ddpscope::gui {

class ErrorBanner : public QWidget {
  Q_OBJECT

 public:
  explicit ErrorBanner(QWidget* parent = nullptr);
  void showMessage(const QString& message, bool reload = false, bool saveCopy = false);
  void clear();

 signals:
  void reloadRequested();
  void saveCopyRequested();

 private:
  QLabel* m_text;
  QPushButton* m_saveCopy;
  QPushButton* m_reload;
  QPushButton* m_close;
};

}  // namespace ddpscope::gui
