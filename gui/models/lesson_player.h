// LessonPlayer: where a lesson's replay stands and how it moves: steps taken, playing at
// a rate, a lesson file's stops, and Predict mode (stop before each step the lesson's
// kind asks about, take the student's first answer to each question as the score). No
// widgets: the Learn page draws what it says (changed) and feeds it the clicks.
#pragma once

#include <QObject>
#include <QTimer>
#include <vector>

#include "lesson.h"

namespace ddpscope::gui {

class LessonPlayer : public QObject {
  Q_OBJECT

 public:
  explicit LessonPlayer(QObject* parent = nullptr);

  // A lesson (the caller's; it outlives its use here) from step 0; `stops`: a lesson
  // file's steps where Play halts, ascending. Resets the score.
  void setLesson(const Lesson& lesson, std::vector<int> stops);
  const Lesson& lesson() const { return *m_lesson; }
  size_t applied() const { return m_applied; }  // steps shown so far
  const std::vector<int>& stops() const { return m_stops; }

  // Predict mode: ask before the steps the lesson's kind asks about.
  void setPredicting(bool on);
  bool isPredicting() const { return m_predicting; }
  bool isAsking() const { return m_asking; }  // waiting for the student's answer
  int score() const { return m_score; }
  int predictions() const { return m_predictions; }

  void stepForward();
  void stepBack();
  void toStart();
  void toEnd();
  void jumpTo(size_t step);  // a link's step, nothing asked
  void setPlaying(bool playing);
  bool isPlaying() const { return m_timer.isActive(); }
  void setStepsPerSecond(double rate);
  // The student's answer to the question asked, judged by the lesson's view. A question
  // counts once: scored when its first answer is right, missed at its first wrong one;
  // the step is taken when it is right.
  void answer(const QString& choice, bool right, const QString& verdict);

 signals:
  void changed();  // a step, a question, a lesson: show the state
  void playingChanged(bool playing);
  void answered(const QString& choice);          // the first answer to a question
  void judged(const QString& text, bool right);  // what the student is told ("" clears it)
  void stopReached(int step);                    // Play halted at a lesson file's stop

 private:
  const Lesson* m_lesson;
  std::vector<int> m_stops;
  size_t m_applied = 0;
  bool m_predicting = false;
  bool m_asking = false;  // waiting for the student's answer about steps[m_applied]
  bool m_guessedWrong = false;
  int m_score = 0, m_predictions = 0;
  QTimer m_timer;
};

}  // namespace ddpscope::gui
