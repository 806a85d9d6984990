// LessonTransport: the Learn page's bar under the lesson: to the start, back, Play/Pause,
// forward, to the end, the speed, and "Copy link". It drives a LessonPlayer and shows
// whether it plays; the buttons never take the keyboard focus, so the page's keys work.
#pragma once

#include <QWidget>

class QPushButton;

namespace ddpscope::gui {

class LessonPlayer;

class LessonTransport : public QWidget {
  Q_OBJECT

 public:
  explicit LessonTransport(LessonPlayer* player, QWidget* parent = nullptr);

 signals:
  void copyLinkClicked();

 private:
  QPushButton* m_play = nullptr;
};

}  // namespace ddpscope::gui
