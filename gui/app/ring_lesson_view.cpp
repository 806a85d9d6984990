#include "ring_lesson_view.h"

#include <QLabel>
#include <QVBoxLayout>

#include "ring_view.h"
#include "plural.h"

namespace ddpscope::gui {

RingLessonView::RingLessonView(QObject* parent) : LessonView(parent) {
  m_ring = new RingView;
  connect(m_ring, &RingView::cellClicked, this, &RingLessonView::judge);
  m_panel = new QWidget;
  auto* layout = new QVBoxLayout(m_panel);
  layout->setContentsMargins(0, 0, 0, 0);
  m_tally = new QLabel;
  m_tally->setWordWrap(true);
  m_tally->setTextFormat(Qt::PlainText);
  layout->addWidget(m_tally);
  layout->addStretch(1);
}

QWidget* RingLessonView::stage() { return m_ring; }

void RingLessonView::setLesson(const Lesson& lesson) {
  m_lesson = &lesson;
  m_asking = false;
}

void RingLessonView::showState(const LessonState& s, size_t applied, bool asking) {
  m_applied = applied;
  m_asking = asking;
  const int n = m_lesson->ring_ranks;
  m_ring->setState(s, n, applied > 0 ? &m_lesson->steps[applied - 1] : nullptr);
  QStringList sent;
  for (size_t r = 0; r < s.ring_bytes_sent.size(); ++r)
    sent
        << tr("rank %1: sent %2, %3 B").arg(r).arg(countOf(s.ring_steps_done[r], tr("step"))).arg(s.ring_bytes_sent[r]);
  m_tally->setText(tr("Sent so far (the tensor is %1 B on every rank):\n%2\nAt the end each rank has sent "
                      "2(n-1)/n = %3 times the tensor.")
                       .arg(m_lesson->ring_tensor_bytes)
                       .arg(sent.join(QLatin1Char('\n')))
                       .arg(n > 0 ? 2.0 * (n - 1) / n : 0.0, 0, 'f', 2));
}

QString RingLessonView::title(const Lesson& lesson) const {
  return tr("allreduce #%1 around a ring of %2 ranks").arg(lesson.pass).arg(lesson.ring_ranks);
}

QString RingLessonView::question(const LessonStep& next) const {
  return tr("Which block does rank %1 send next? Click it in rank %1's row.").arg(next.rank);
}

// Predict mode: the block the asked rank sends next.
void RingLessonView::judge(int rank, int block) {
  if (!m_asking || m_applied >= m_lesson->steps.size()) return;
  const LessonStep& next = m_lesson->steps[m_applied];
  LessonAnswer answer;
  answer.choice = tr("rank %1, block %2").arg(rank).arg(block);
  answer.right = rank == next.rank && block == next.param;
  if (answer.right) {
    answer.verdict = tr("Right: rank %1 sends block %2.").arg(rank).arg(block);
  } else {
    const int n = m_lesson->ring_ranks;
    const QString why = rank != next.rank ? tr("the question is about rank %1's row").arg(next.rank)
                        : next.iteration == 0
                            ? tr("in its first step a rank sends the block with its own number")
                            : tr("a rank sends the block it received (and %1) in its previous step")
                                  .arg(next.iteration < n ? tr("added its own values to") : tr("took as the full sum"));
    answer.verdict = tr("Not block %1: %2. Try again.").arg(block).arg(why);
  }
  emit answered(answer);
}

}  // namespace ddpscope::gui
