// ClassroomController: the Learn page's class over the network (classroom.h), beside the
// page at the window's level: what it sends and follows are links to steps (lesson_link.h). Teaching makes this app the
// teacher's: the lesson and step shown go to every student, students may step freely and be called back, and in predict
// mode the class's answers are counted as a bar chart before the step is revealed. Joining makes it a student's: it
// follows the teacher's step unless the teacher lets it step freely; a student who steps away stops following (the
// teacher's bar says where they are) until they follow again or the teacher calls the class back. The class bar
// (class_bar.h) sits on the page; a one-line status is the window's to place.
#pragma once

#include <QHostAddress>
#include <QObject>
#include <QLabel>
#include <QPointer>

class QAction;
class QChartView;
class QDialog;

class QMenu;

namespace ddpscope::gui {

class ClassBar;
class ClassroomClient;
class ClassroomServer;
class LearnPage;

class ClassroomController : public QObject {
  Q_OBJECT

 public:
  ClassroomController(LearnPage* page, QObject* parent);
  ~ClassroomController() override;

  // Learn > Teach a class..., Let students step freely, Call the class back, Ask, End, Join.
  void addActions(QMenu* learn);
  // Teach on `port` (0: any free port) at `address` (the teacher's choice of interface;
  // Any: every one), or join the class at "HOST:PORT" with the teacher's code; false with
  // *error. end() leaves either.
  bool teach(quint16 port, QString* error, const QHostAddress& address = QHostAddress::Any);
  bool join(const QString& where, const QString& code, const QString& name, QString* error);
  void end();
  int ask();  // the teacher: a question about the next step; -1 without a class
  // The student: back to the teacher's step after stepping on their own.
  void followAgain();
  bool isOnOwn() const { return m_onOwn; }

  ClassroomServer* server() const { return m_server; }
  ClassroomClient* client() const { return m_client; }
  ClassBar* bar() const { return m_bar; }
  QLabel* statusLabel() const { return m_status; }  // for the window's status bar

 signals:
  void statusMessage(const QString& text);
  void failed(const QString& message);  // a class could not begin, or refused this app
  void showPage();                      // a class began: the Learn tab should be in front

 private:
  QString address() const;
  void showStatus();
  void showAnswers();
  void followTeacher(const QString& link, bool free);
  void noticeOwnStep();
  QStringList namesWithPlaces() const;

  LearnPage* m_page;
  ClassroomServer* m_server = nullptr;
  ClassroomClient* m_client = nullptr;
  QAction* m_free = nullptr;
  QPointer<QLabel> m_status;  // a status bar that takes it deletes it, maybe before this
  ClassBar* m_bar = nullptr;
  QDialog* m_answers = nullptr;
  QChartView* m_answersView = nullptr;
  QString m_following;  // the teacher's link the page is loading
  // A student who stepped away from the teacher's step while following: the teacher's
  // steps no longer move their page (until followAgain or a call back); the teacher sees it.
  bool m_onOwn = false;
  QString m_teacherLink;  // the teacher's latest step
  bool m_teacherFree = false;
  QAction* m_followAgain = nullptr;
};

}  // namespace ddpscope::gui
