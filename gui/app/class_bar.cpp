#include "class_bar.h"
#include "plural.h"

#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

namespace ddpscope::gui {
namespace {

QLabel* plainLabel() {
  auto* l = new QLabel;
  l->setTextFormat(Qt::PlainText);  // students choose their names: never markup
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}

}  // namespace

ClassBar::ClassBar(QWidget* parent) : QFrame(parent) {
  setFrameShape(QFrame::StyledPanel);
  auto* rows = new QVBoxLayout(this);
  rows->setContentsMargins(8, 4, 8, 4);
  auto* top = new QHBoxLayout;
  m_where = plainLabel();
  m_where->setStyleSheet(QStringLiteral("font-weight: bold"));
  m_copy = new QToolButton;
  m_copy->setText(tr("Copy how to join"));
  m_copy->setToolTip(tr("The command a student runs to join this class"));
  connect(m_copy, &QToolButton::clicked, this, [this] { QApplication::clipboard()->setText(m_joinLine); });
  top->addWidget(m_where, 1);
  top->addWidget(m_copy);
  rows->addLayout(top);
  m_students = plainLabel();
  m_answers = plainLabel();
  rows->addWidget(m_students);
  rows->addWidget(m_answers);
  showNoClass();
}

void ClassBar::showTeaching(const QString& address, const QString& listening, const QString& code,
                            const QStringList& names) {
  m_where->setText(tr("Teaching at %1 (%2) · join code %3").arg(address, listening, code));
  // "10.0.0.5 or 192.168.1.20:47123": the first host, with the port.
  const QString port = address.section(QLatin1Char(':'), -1);
  m_joinLine = QStringLiteral("ddpscope --join %1:%2 --code %3 --name YOUR-NAME")
                   .arg(address.section(QLatin1Char(' '), 0, 0).section(QLatin1Char(':'), 0, 0), port, code);
  m_copy->setVisible(true);
  m_students->setText(names.isEmpty() ? tr("No student has joined yet.")
                                      : countOf(names.size(), tr("student")) + QStringLiteral(": ") +
                                            names.join(QStringLiteral(", ")));
  m_students->setVisible(true);
  setVisible(true);
}

void ClassBar::showJoined(const QString& where, const QString& name, const QString& state) {
  m_where->setText(tr("In class at %1 as %2 · %3").arg(where, name, state));
  m_joinLine.clear();
  m_copy->setVisible(false);
  m_students->setVisible(false);
  setVisible(true);
}

void ClassBar::showAnswers(const QMap<QString, int>& answers, int of) {
  if (answers.isEmpty()) {
    m_answers->setVisible(false);
    return;
  }
  QStringList parts;
  int total = 0;
  for (auto it = answers.begin(); it != answers.end(); ++it) {
    parts << tr("%1: %2").arg(it.key()).arg(it.value());
    total += it.value();
  }
  m_answers->setText(tr("Answers (%1 of %2): %3").arg(total).arg(of).arg(parts.join(QStringLiteral(" · "))));
  m_answers->setVisible(true);
}

void ClassBar::showNoClass() {
  m_answers->setVisible(false);
  setVisible(false);
}

QString ClassBar::text() const {
  QStringList lines{m_where->text()};
  if (m_students->isVisibleTo(this)) lines << m_students->text();
  if (m_answers->isVisibleTo(this)) lines << m_answers->text();
  return lines.join(QLatin1Char('\n'));
}

QString ClassBar::joinLine() const { return m_joinLine; }

}  // namespace ddpscope::gui
