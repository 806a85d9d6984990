// A classroom over the network: the teacher's app listens (ClassroomServer) and shows a
// join code; students' apps join (ClassroomClient) with the address and the code. The
// teacher's lesson and step go to every student as a link (lesson_link.h): a student who
// joins late or comes back after a dropped connection gets the current one at once. The
// teacher can let students step freely and call them back; in predict mode the teacher
// asks, students' answers are counted for the teacher's bar chart.
//
// Wire: one JSON object per line, UTF-8, at most 16 KiB a line.
//   student -> teacher  {"type": "join", "code": "482913", "name": "Ana"}   (first, within 5 s)
//                       {"type": "answer", "question": 3, "choice": "block 2"}
//   teacher -> student  {"type": "welcome", "teacher": "..."} | {"type": "refused", "reason": "..."}
//                       {"type": "state", "link": "ddpscope:learn?...", "free": false}
//                       {"type": "ask", "question": 3, "step": 12}
// What comes from the network is checked before use: the code compared in constant time,
// a line that is not such an object (or too long, or not a join first) drops that client,
// a link is parsed by LessonLink::parse before a student opens anything.
#pragma once

#include <QByteArray>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QHostAddress>
#include <QMap>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>
#include <vector>

class QTcpServer;
class QTcpSocket;

namespace ddpscope::gui {

// A student's name as the class shows it: control and format characters gone, spaces
// simplified, at most kLongestName characters. Shown as plain text wherever it appears.
constexpr int kLongestName = 40;
QString cleanName(const QString& given);

class ClassroomServer : public QObject {
  Q_OBJECT

 public:
  static constexpr int kMaxStudents = 200;
  explicit ClassroomServer(QObject* parent = nullptr);
  ~ClassroomServer() override;
  // Listens on `address`:`port` (0: any free port) with a new random join code of 60
  // bits ("ABCD-EFGH-JKLM"; typed in any case, dashes optional); false with *error (the
  // port taken, no permission) otherwise. An address that sends more than 3 wrong codes
  // waits 1 s before its next try is looked at, then 2, 4, ... up to 60 s.
  bool open(const QHostAddress& address, quint16 port, QString* error);
  QHostAddress listeningOn() const { return m_listening; }
  void close();
  bool isOpen() const;
  quint16 port() const;
  QString code() const { return m_code; }
  int studentCount() const;
  QStringList studentNames() const;
  // Each joined student's name and where they stepped on their own (a link; empty: they
  // follow the teacher), in the order they joined.
  QList<std::pair<QString, QString>> studentPlaces() const;
  // The teacher's lesson and step (a link) and whether students may step on their own;
  // sent to every student now and to each one who joins later.
  void setState(const QString& link, bool free);
  QString link() const { return m_link; }
  bool isFree() const { return m_free; }
  // Predict mode: a new question about step `step`; earlier answers are cleared.
  int ask(int step);
  // The answers to the current question: choice -> students (one answer a student).
  QMap<QString, int> answers() const;
  int refusedCount() const { return m_refused; }
  // Join codes compared with the class's, and tries turned away unlooked at while their
  // address waited (guessing).
  int codesChecked() const { return m_codesChecked; }
  int guessesTurnedAway() const { return m_guessesTurnedAway; }

 signals:
  void studentsChanged(int count);
  void answersChanged();
  void clientRefused(const QString& peer, const QString& why);

 private:
  struct Student {
    QPointer<QTcpSocket> socket;
    QByteArray buffer;
    QString name;
    bool joined = false;
    QString answer;         // to the current question
    QString place;          // the step they went to on their own (a link); empty: following
    double lineBudget = 0;  // lines it may still send now (flooding: kLinesPerSecond)
    QElapsedTimer budgetAt;
  };
  struct WrongCodes {
    int count = 0;
    QDeadlineTimer until;  // its next try is looked at once this has expired (default: expired)
  };
  void onConnection();
  void onReadable(QTcpSocket* socket);
  void handle(Student& s, const QByteArray& line);
  void refuse(Student& s, const QString& why, bool tell);
  void send(QTcpSocket* socket, const QByteArray& json);
  QByteArray stateMessage() const;
  Student* find(QTcpSocket* socket);
  void forget(QTcpSocket* socket);

  QTcpServer* m_server = nullptr;
  QString m_code;
  std::vector<Student> m_students;
  QString m_link;
  bool m_free = false;
  int m_question = 0, m_questionStep = -1;
  int m_refused = 0;
  QHostAddress m_listening;
  QMap<QString, WrongCodes> m_wrongCodes;  // by peer address
  int m_codesChecked = 0, m_guessesTurnedAway = 0;
  bool m_answersPending = false;
};

class ClassroomClient : public QObject {
  Q_OBJECT

 public:
  explicit ClassroomClient(QObject* parent = nullptr);
  ~ClassroomClient() override;
  // Connects and joins; reconnects by itself (every second) after a dropped connection,
  // until leave(). The outcome comes as joined() or refused().
  void join(const QString& host, quint16 port, const QString& code, const QString& name);
  void leave();
  bool isJoined() const { return m_joined; }
  QString where() const { return m_host + QLatin1Char(':') + QString::number(m_port); }
  QString name() const { return m_name; }
  QString link() const { return m_link; }
  bool isFree() const { return m_free; }
  int question() const { return m_question; }
  int questionStep() const { return m_questionStep; }
  void answer(const QString& choice);
  // Tells the teacher where this student stepped on their own (a link), or, empty, that
  // they follow again; said again after a reconnection.
  void tellPlace(const QString& link);
  QString place() const { return m_place; }

 signals:
  void joined();
  void refused(const QString& why);
  void stateReceived(const QString& link, bool free);
  void asked(int question, int step);
  void connectionLost();

 private:
  void connectNow();
  void onReadable();

  QTcpSocket* m_socket = nullptr;
  QTimer m_retry;
  QString m_host, m_code, m_name;
  quint16 m_port = 0;
  QByteArray m_buffer;
  bool m_joined = false, m_leaving = false, m_refusedForGood = false;
  QString m_link;
  bool m_free = false;
  int m_question = 0, m_questionStep = -1;
  QString m_place;
};

}  // namespace ddpscope::gui
