// EmptyState: a view's content, or in its place a sentence saying why there is nothing to
// show and what to do (open a run, launch a job, run the kind of job that records it),
// instead of blank axes and empty tables.
#pragma once

#include <QLabel>
#include <QStackedWidget>

namespace ddpscope::gui {

class EmptyState : public QStackedWidget {
  Q_OBJECT

 public:
  explicit EmptyState(QWidget* content, QWidget* parent = nullptr) : QStackedWidget(parent) {
    m_message = new QLabel;
    m_message->setAlignment(Qt::AlignCenter);
    m_message->setWordWrap(true);
    m_message->setMargin(24);
    m_message->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QPalette p = m_message->palette();
    p.setColor(QPalette::WindowText, p.color(QPalette::PlaceholderText));
    m_message->setPalette(p);
    addWidget(m_message);
    addWidget(content);
    setCurrentIndex(0);
  }
  // Shows `why` instead of the content; an empty `why` shows the content.
  void setEmpty(const QString& why) {
    m_message->setText(why);
    setCurrentIndex(why.isEmpty() ? 1 : 0);
  }
  bool isEmpty() const { return currentIndex() == 0; }
  QString message() const { return m_message->text(); }

 private:
  QLabel* m_message = nullptr;
};

}  // namespace ddpscope::gui
