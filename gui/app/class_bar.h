// The class bar at the top of the Learn page, for the teacher and for a student (issue
// 50): where the class is and how to join it, who joined, and the current question's
// answers. Hidden when there is no class. Names are the students' own, shown as plain
// text (classroom.h cleans them).
#pragma once

#include <QFrame>
#include <QMap>
#include <QStringList>

class QLabel;
class QToolButton;

namespace ddpscope::gui {

class ClassBar : public QFrame {
  Q_OBJECT

 public:
  explicit ClassBar(QWidget* parent = nullptr);
  // The teacher's: the address students reach, how it listens, the join code, the names.
  void showTeaching(const QString& address, const QString& listening, const QString& code, const QStringList& names);
  // A student's: where the class is, the name given, following or stepping freely.
  void showJoined(const QString& where, const QString& name, const QString& state);
  // The current question's answers: choice -> students; `of` students in the class.
  void showAnswers(const QMap<QString, int>& answers, int of);
  void showNoClass();

  QString text() const;      // what the bar says, every line (for tests)
  QString joinLine() const;  // what "Copy" puts on the clipboard: the students' command

 private:
  QLabel* m_where = nullptr;
  QLabel* m_students = nullptr;
  QLabel* m_answers = nullptr;
  QToolButton* m_copy = nullptr;
  QString m_joinLine;
};

}  // namespace ddpscope::gui
