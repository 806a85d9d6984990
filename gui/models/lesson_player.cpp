#include "lesson_player.h"

#include <QCoreApplication>
#include <algorithm>

#include "learn_page_text.h"
#include "lesson_kind.h"

namespace ddpscope::gui {
namespace {

const Lesson& emptyLesson() {
  static const Lesson empty;
  return empty;
}

}  // namespace

LessonPlayer::LessonPlayer(QObject* parent) : QObject(parent), m_lesson(&emptyLesson()) {
  connect(&m_timer, &QTimer::timeout, this, [this] {
    if (m_applied >= m_lesson->steps.size() || m_asking) {
      setPlaying(false);
      return;
    }
    stepForward();
  });
}

void LessonPlayer::setLesson(const Lesson& lesson, std::vector<int> stops) {
  setPlaying(false);
  m_lesson = &lesson;
  m_stops = std::move(stops);
  m_applied = 0;
  m_asking = false;
  m_score = m_predictions = 0;
  emit changed();
}

void LessonPlayer::setPredicting(bool on) {
  m_predicting = on;
  if (!on) m_asking = false;
  emit judged(QString(), true);  // no verdict outlives its question
  emit changed();
}

void LessonPlayer::stepForward() {
  if (m_applied >= m_lesson->steps.size()) return;
  if (m_predicting && !m_asking && kindOf(*m_lesson).asksBefore(m_lesson->steps[m_applied])) {
    m_asking = true;
    m_guessedWrong = false;
    emit judged(QString(), true);  // a new question
    setPlaying(false);
    emit changed();
    return;
  }
  if (m_asking) return;  // answer first (or leave Predict mode)
  ++m_applied;
  emit changed();
  // A lesson file's stops: Play halts there for the teacher to talk.
  if (isPlaying() && std::binary_search(m_stops.begin(), m_stops.end(), static_cast<int>(m_applied))) {
    setPlaying(false);
    emit stopReached(static_cast<int>(m_applied));
  }
}

void LessonPlayer::stepBack() {
  m_asking = false;
  emit judged(QString(), true);
  if (m_applied > 0) --m_applied;
  emit changed();
}

void LessonPlayer::toStart() {
  m_asking = false;
  emit judged(QString(), true);
  setPlaying(false);
  m_applied = 0;
  emit changed();
}

void LessonPlayer::toEnd() {
  m_asking = false;
  emit judged(QString(), true);
  setPlaying(false);
  m_applied = m_lesson->steps.size();
  emit changed();
}

void LessonPlayer::jumpTo(size_t step) {
  m_asking = false;
  emit judged(QString(), true);
  m_applied = std::min(step, m_lesson->steps.size());
  emit changed();
}

void LessonPlayer::setPlaying(bool playing) {
  if (playing && m_applied >= m_lesson->steps.size()) {
    m_applied = 0;  // play again from the start, shown at once (not at the first tick)
    emit changed();
  }
  if (playing) {
    m_timer.start();
  } else {
    m_timer.stop();
  }
  emit playingChanged(playing);
}

void LessonPlayer::setStepsPerSecond(double rate) { m_timer.setInterval(static_cast<int>(1000 / std::max(rate, 0.1))); }

void LessonPlayer::answer(const QString& choice, bool right, const QString& verdict) {
  if (!m_asking) return;
  if (!m_guessedWrong) {
    emit answered(choice);
    ++m_predictions;
    if (right) ++m_score;
  }
  if (!right) {
    m_guessedWrong = true;
    emit judged(verdict, false);
    return;
  }
  const QString text = m_guessedWrong ? learnPageTr("Yes, that one.") : verdict;
  m_asking = false;
  ++m_applied;
  emit changed();
  emit judged(text, true);
}

}  // namespace ddpscope::gui
