// A class on loopback (issue 33): a teacher's window (in this process) and three
// students' apps (separate `ddpscope --join` processes, offscreen) follow the teacher's
// lesson and step; free stepping and the call back; a late joiner and a dropped
// connection catch up to the current step; a bad code and a garbage client are refused
// while the class goes on; fifty scripted students join one class and their answers are
// counted for the teacher's chart.
#include <QtTest/QtTest>

#include <QChart>
#include <QChartView>
#include <QProcess>
#include <QLabel>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <cmath>
#include <memory>

#include "class_bar.h"
#include "classroom.h"
#include "lesson_catalog.h"
#include "graph_view.h"
#include "learn_page.h"
#include "lesson.h"
#include "main_window.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"

using namespace ddpscope::gui;

namespace {

// A student's app, its stdout read as it says what it does ("class: at LINK").
class Student {
 public:
  Student(quint16 port, const QString& code, const QString& name) {
    m_app.setProcessChannelMode(QProcess::MergedChannels);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("QT_QPA_PLATFORM", "offscreen");
    m_app.setProcessEnvironment(env);
    m_app.start(QStringLiteral(DDPSCOPE_APP_PATH),
                {"--join", QString("127.0.0.1:%1").arg(port), "--code", code, "--name", name});
  }
  ~Student() {
    m_app.kill();
    m_app.waitForFinished(5000);
  }
  // Waits until the app has said `line` (counting from the start); false after 20 s.
  bool said(const QString& line, int times = 1) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < 20000) {
      m_out += QString::fromUtf8(m_app.readAll());
      if (m_out.count(line) >= times) return true;
      QTest::qWait(50);
    }
    return false;
  }
  QString out() const { return m_out; }

 private:
  QProcess m_app;
  QString m_out;
};

QString at(int lesson, int step) {
  return QString("class: at ddpscope:learn?lesson=%1&step=%2\n").arg(lesson).arg(step);
}

}  // namespace

class TestClassroom : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void testStudentsFollowTheTeacher() {
    QTemporaryDir dir;
    MainWindow teacher(dir.path());
    QString error;
    QVERIFY2(teacher.part<LearnPage>()->classroom()->teach(0, &error), qPrintable(error));
    ClassroomServer* server = teacher.part<LearnPage>()->classroom()->server();
    QVERIFY(teacher.openLesson(0));
    LearnPage* page = teacher.part<LearnPage>();
    std::vector<std::unique_ptr<Student>> students;
    for (int i = 0; i < 3; ++i)
      students.push_back(std::make_unique<Student>(server->port(), server->code(), QString("s%1").arg(i)));
    QTRY_COMPARE_WITH_TIMEOUT(server->studentCount(), 3, 20000);
    QVERIFY(server->studentNames().contains("s1"));
    for (int i = 0; i < 5; ++i)
      page->stepForward();
    for (auto& s : students)
      QVERIFY2(s->said(at(1, 5)), qPrintable(s->out()));
    // Free stepping: the students are told, and do not follow the teacher's steps.
    server->setState(page->linkToStep().toString(), true);
    for (auto& s : students)
      QVERIFY2(s->said("class: free\n"), qPrintable(s->out()));
    page->stepForward();
    page->stepForward();  // step 7, published as free
    QTest::qWait(500);
    for (auto& s : students)
      QVERIFY2(!s->out().contains(at(1, 7)), qPrintable(s->out()));
    // Called back: to the teacher's step.
    server->setState(page->linkToStep().toString(), false);
    for (auto& s : students)
      QVERIFY2(s->said(at(1, 7)), qPrintable(s->out()));
    // A late joiner catches up at once.
    Student late(server->port(), server->code(), "late");
    QVERIFY2(late.said(at(1, 7)), qPrintable(late.out()));
    // A dropped connection: the student reconnects by itself and catches up to the step
    // taken meanwhile.
    QTcpSocket* one = nullptr;
    for (QTcpSocket* s : server->findChildren<QTcpSocket*>())
      if (s->state() == QAbstractSocket::ConnectedState) one = s;
    QVERIFY(one);
    one->abort();
    page->stepForward();  // step 8
    QTRY_COMPARE_WITH_TIMEOUT(server->studentCount(), 4, 20000);
    int caughtUp = 0;
    for (auto& s : students)
      caughtUp += s->said(at(1, 8)) ? 1 : 0;
    caughtUp += late.said(at(1, 8)) ? 1 : 0;
    QCOMPARE(caughtUp, 4);
    // A wrong code is refused with the reason; a garbage client is dropped; the class goes on.
    Student wrong(server->port(), "000000" == server->code() ? "111111" : "000000", "intruder");
    QVERIFY2(wrong.said("class: refused: wrong join code"), qPrintable(wrong.out()));
    QTcpSocket garbage;
    garbage.connectToHost("127.0.0.1", server->port());
    QVERIFY(garbage.waitForConnected(5000));
    garbage.write("GET / HTTP/1.0\r\n\r\n");
    QTRY_VERIFY_WITH_TIMEOUT(garbage.state() == QAbstractSocket::UnconnectedState, 10000);
    QVERIFY(server->refusedCount() >= 2);
    page->stepForward();  // step 9
    for (auto& s : students)
      QVERIFY2(s->said(at(1, 9)), qPrintable(s->out()));
    QCOMPARE(server->studentCount(), 4);
  }

  // Predict mode through the windows: the teacher asks, a student's Learn tab asks its
  // student, the click is the answer, and the teacher's chart counts it.
  void testTheTeacherSeesTheClassAnswer() {
    QTemporaryDir dir;
    MainWindow teacher(dir.path());
    teacher.show();
    QString error;
    QVERIFY2(teacher.part<LearnPage>()->classroom()->teach(0, &error), qPrintable(error));
    QVERIFY(teacher.openLesson(0));
    for (int i = 0; i < 3; ++i)
      teacher.part<LearnPage>()->stepForward();
    MainWindow student(dir.path());
    student.show();
    QVERIFY2(student.part<LearnPage>()->classroom()->join(
                 QString("127.0.0.1:%1").arg(teacher.part<LearnPage>()->classroom()->server()->port()),
                 teacher.part<LearnPage>()->classroom()->server()->code(), "Dana", &error),
             qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(student.part<LearnPage>()->applied(), teacher.part<LearnPage>()->applied(), 10000);
    // The class bar on the Learn page, both sides (issue 50): where, how to join, who.
    const quint16 port = teacher.part<LearnPage>()->classroom()->server()->port();
    QVERIFY(teacher.part<LearnPage>()->classroom()->bar() &&
            teacher.part<LearnPage>()->classroom()->bar()->isVisibleTo(teacher.part<LearnPage>()));
    QTRY_VERIFY2_WITH_TIMEOUT(teacher.part<LearnPage>()->classroom()->bar()->text().contains("1 student: Dana"),
                              qPrintable(teacher.part<LearnPage>()->classroom()->bar()->text()), 10000);
    QVERIFY2(teacher.part<LearnPage>()->classroom()->bar()->text().contains(
                 QString(":%1 (listening on every interface) · join code %2")
                     .arg(port)
                     .arg(teacher.part<LearnPage>()->classroom()->server()->code())),
             qPrintable(teacher.part<LearnPage>()->classroom()->bar()->text()));
    QVERIFY2(teacher.part<LearnPage>()->classroom()->bar()->joinLine().startsWith("ddpscope --join ") &&
                 teacher.part<LearnPage>()->classroom()->bar()->joinLine().endsWith(
                     QString(":%1 --code %2 --name YOUR-NAME")
                         .arg(port)
                         .arg(teacher.part<LearnPage>()->classroom()->server()->code())),
             qPrintable(teacher.part<LearnPage>()->classroom()->bar()->joinLine()));
    QVERIFY(student.part<LearnPage>()->classroom()->bar() &&
            student.part<LearnPage>()->classroom()->bar()->isVisibleTo(student.part<LearnPage>()));
    QTRY_VERIFY2_WITH_TIMEOUT(student.part<LearnPage>()->classroom()->bar()->text().startsWith(
                                  QString("In class at 127.0.0.1:%1 as Dana · following the teacher").arg(port)),
                              qPrintable(student.part<LearnPage>()->classroom()->bar()->text()), 10000);
    // The teacher asks about the next node to run (stepping on to a NodeRuns step first).
    LearnPage* own = teacher.part<LearnPage>();
    while (own->lesson().steps[own->applied()].kind != StepKind::NodeRuns)
      own->stepForward();
    QTRY_COMPARE_WITH_TIMEOUT(student.part<LearnPage>()->applied(), own->applied(), 10000);
    QVERIFY(teacher.part<LearnPage>()->classroom()->ask() > 0);
    QTRY_VERIFY_WITH_TIMEOUT(student.part<LearnPage>()->isAskingPrediction(), 10000);
    const LessonStep& next = student.part<LearnPage>()->lesson().steps[student.part<LearnPage>()->applied()];
    emit student.part<LearnPage>()->graph()->nodeIndexClicked(next.node);
    QTRY_COMPARE_WITH_TIMEOUT(teacher.part<LearnPage>()->classroom()->server()->answers().size(), 1, 10000);
    const QString choice = teacher.part<LearnPage>()->classroom()->server()->answers().firstKey();
    QVERIFY2(choice.contains(QString::fromStdString(own->lesson().graph.nodes[size_t(next.node)].op)),
             qPrintable(choice));
    QChartView* chart = nullptr;  // the answers' window's chart (the tabs have charts of their own)
    for (QChartView* v : teacher.findChildren<QChartView*>())
      if (v->window()->windowTitle() == "The class's answers") chart = v;
    QVERIFY(chart && chart->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(chart->chart()->title().startsWith("1 of 1 student answered"), 5000);
    QVERIFY2(
        teacher.part<LearnPage>()->classroom()->bar()->text().contains(QString("Answers (1 of 1): %1: 1").arg(choice)),
        qPrintable(teacher.part<LearnPage>()->classroom()->bar()->text()));
  }

  // A port already taken: the class does not open, and says which port and what to do.
  void testATakenPortIsSaid() {
    ClassroomServer first, second;
    QString error;
    QVERIFY2(first.open(QHostAddress::LocalHost, 0, &error), qPrintable(error));
    QVERIFY(!second.open(QHostAddress::LocalHost, first.port(), &error));
    QVERIFY2(error.contains(QString::number(first.port())) && error.contains("choose another port"), qPrintable(error));
    QVERIFY(!second.isOpen());
  }

  // Fifty students (scripted clients on loopback) in one class: all get each step, all
  // answer, the answers are counted per choice.
  // Guessing the code is hopeless (issue 49: a 6-digit code fell in 48 s at 7,000 wrong
  // codes a second): 60 bits, and an address that sent more than 3 wrong codes waits 1,
  // 2, 4 ... 60 s before its next try is looked at, even with the right code.
  void testGuessingTheCodeIsHopeless() {
    ClassroomServer server;
    QString error;
    QVERIFY2(server.open(QHostAddress::LocalHost, 0, &error), qPrintable(error));
    QVERIFY2(
        QRegularExpression("^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$").match(server.code()).hasMatch(),
        qPrintable(server.code()));
    // One try: connect, join with `code`, read the answer.
    const auto attempt = [&](const QString& code) {
      QTcpSocket raw;
      raw.connectToHost("127.0.0.1", server.port());
      if (!raw.waitForConnected(2000)) return QString("no connection");
      raw.write(QString(R"({"type": "join", "code": "%1", "name": "guesser"})"
                        "\n")
                    .arg(code)
                    .toUtf8());
      QElapsedTimer t;
      t.start();
      QByteArray reply;
      while (!reply.contains('\n') && t.elapsed() < 2000) {
        QCoreApplication::processEvents();
        if (raw.waitForReadyRead(10)) reply += raw.readAll();
      }
      return QString::fromUtf8(reply);
    };
    QElapsedTimer clock;
    clock.start();
    int tries = 0;
    while (clock.elapsed() < 4000) {
      attempt(QString("AAAA-AAAA-%1").arg(tries % 10000, 4, 10, QChar('2')));
      ++tries;
    }
    const double seconds = clock.elapsed() / 1000.0;
    // Extrapolated to an hour from the first 4 s (the waits only grow after them).
    const double perHour = server.codesChecked() * 3600.0 / seconds;
    const double space = std::pow(32.0, 12);
    std::printf(
        "guessing: %d tries in %.1f s, %d codes checked, %d turned away unlooked at; at most %.0f "
        "codes an hour, %.1e of the code space\n",
        tries, seconds, server.codesChecked(), server.guessesTurnedAway(), perHour, perHour / space);
    QVERIFY(perHour / space <= 1e-6);
    QVERIFY2(server.codesChecked() <= 6, qPrintable(QString::number(server.codesChecked())));  // 3 free, then 1, 2 s
    QVERIFY(server.guessesTurnedAway() > 10);
    // Waiting, the right code is turned away too, saying how long to wait.
    const QString said = attempt(server.code());
    QVERIFY2(said.contains("too many wrong join codes") && said.contains("wait"), qPrintable(said));
    // Typed in lower case with spaces for dashes it is the same code, once the wait is over
    // (from another address here: 127.0.0.2 is this machine too).
    QTcpSocket other;
    QVERIFY(other.bind(QHostAddress("127.0.0.2")));
    other.connectToHost("127.0.0.1", server.port());
    QVERIFY(other.waitForConnected(2000));
    other.write(QString(R"({"type": "join", "code": "%1", "name": "late"})"
                        "\n")
                    .arg(server.code().toLower().replace('-', ' '))
                    .toUtf8());
    QTRY_COMPARE_WITH_TIMEOUT(server.studentCount(), 1, 5000);
  }

  // One student flooding answer lines never stalls the class: it is dropped past 20 lines
  // a second, its unread bytes are bounded, and the other 199 students' answers reach the
  // teacher within a second (issue 49: with 50 students none got a reply within 5 s).
  void testAFloodingStudentDoesNotStallTheClass() {
    ClassroomServer server;
    QString error;
    QVERIFY2(server.open(QHostAddress::LocalHost, 0, &error), qPrintable(error));
    std::vector<std::unique_ptr<ClassroomClient>> clients;
    for (int i = 0; i < 199; ++i) {
      clients.push_back(std::make_unique<ClassroomClient>());
      clients.back()->join("127.0.0.1", server.port(), server.code(), QString("student %1").arg(i));
    }
    QTRY_COMPARE_WITH_TIMEOUT(server.studentCount(), 199, 60000);
    const int question = server.ask(3);
    QTRY_VERIFY_WITH_TIMEOUT(
        std::all_of(clients.begin(), clients.end(), [&](const auto& c) { return c->question() == question; }), 30000);
    QSignalSpy refused(&server, &ClassroomServer::clientRefused);
    QTcpSocket flooder;
    flooder.connectToHost("127.0.0.1", server.port());
    QVERIFY(flooder.waitForConnected(5000));
    QByteArray flood = QString(R"({"type": "join", "code": "%1", "name": "flood"})"
                               "\n")
                           .arg(server.code())
                           .toUtf8();
    const QByteArray answer = QString(R"({"type": "answer", "question": %1, "choice": "flood"})"
                                      "\n")
                                  .arg(question)
                                  .toUtf8();
    for (int i = 0; i < 100000; ++i)
      flood += answer;
    flooder.write(flood);  // 5 MB of answers at once
    // The teacher's event loop stays responsive while it arrives.
    QElapsedTimer gap;
    gap.start();
    qint64 longest = 0;
    QTimer beat;
    QObject::connect(&beat, &QTimer::timeout, [&] { longest = std::max(longest, gap.restart()); });
    beat.start(10);
    QElapsedTimer answered;
    answered.start();
    for (auto& c : clients)
      c->answer("block 2");
    QTRY_VERIFY_WITH_TIMEOUT(server.answers().value("block 2") == 199, 5000);
    const qint64 allIn = answered.elapsed();
    QTRY_VERIFY_WITH_TIMEOUT(!refused.isEmpty(), 5000);
    QVERIFY2(refused.first().at(1).toString().contains("flooding"), qPrintable(refused.first().at(1).toString()));
    QTRY_VERIFY_WITH_TIMEOUT(!server.answers().contains("flood"), 2000);  // gone with its sender
    QTest::qWait(300);
    beat.stop();
    std::printf(
        "flooding: 199 answers all in %lld ms beside a flooding student (dropped); the teacher's event "
        "loop paused at most %lld ms\n",
        static_cast<long long>(allIn), static_cast<long long>(longest));
    QVERIFY2(allIn <= 1000, qPrintable(QString::number(allIn)));
    QVERIFY2(longest < 250, qPrintable(QString::number(longest)));
  }

  // The teacher chooses the interface; the class bar says where the class listens.
  void testTheClassBarSaysWhereItListens() {
    MainWindow teacher(QDir::tempPath());
    QString error;
    QVERIFY2(teacher.part<LearnPage>()->classroom()->teach(0, &error, QHostAddress::LocalHost), qPrintable(error));
    QCOMPARE(teacher.part<LearnPage>()->classroom()->server()->listeningOn(), QHostAddress(QHostAddress::LocalHost));
    const auto bar = [&] {
      for (QLabel* l : teacher.findChildren<QLabel*>())
        if (l->text().startsWith("Class at ")) return l->text();
      return QString();
    };
    QVERIFY2(bar().startsWith(QString("Class at 127.0.0.1:%1 (listening on that address only) · join code %2")
                                  .arg(teacher.part<LearnPage>()->classroom()->server()->port())
                                  .arg(teacher.part<LearnPage>()->classroom()->server()->code())),
             qPrintable(bar()));
    QVERIFY(teacher.part<LearnPage>()->classroom()->teach(0, &error));
    QVERIFY2(bar().contains("(listening on every interface)"), qPrintable(bar()));
  }

  // Names are cleaned before anyone sees them: no control or format characters (terminal
  // escapes, right-to-left overrides), spaces simplified, at most 40 characters.
  void testNamesAreCleaned() {
    const QString name = cleanName(QString("Ana\x1b[31m\nRed") + QChar(0x202E) + "evil" + QString(100, 'x'));
    QVERIFY(name.size() <= 40);
    for (const QChar c : name)
      QVERIFY2(c.category() != QChar::Other_Control && c.category() != QChar::Other_Format, qPrintable(name));
    QVERIFY(name.startsWith("Ana [31m Red evilxxx"));
    QCOMPARE(cleanName(" \t "), QString());
  }

  // A student who joins sees the teacher's lesson and step at once, not the lesson's run
  // as "a run of your own" until the teacher steps (issue 50).
  void testAJoiningStudentSeesTheTeachersLessonAtOnce() {
    QTemporaryDir dir;
    MainWindow teacher(dir.path());
    const int ring = int(std::find_if(lessons().begin(), lessons().end(), [](const LessonInfo& i) { return i.ring; }) -
                         lessons().begin());
    QString error;
    QVERIFY2(teacher.part<LearnPage>()->classroom()->teach(0, &error, QHostAddress::LocalHost), qPrintable(error));
    QVERIFY(teacher.openLesson(ring));  // after the class began: what the class is told then
    Student late(teacher.part<LearnPage>()->classroom()->server()->port(),
                 teacher.part<LearnPage>()->classroom()->server()->code(), "Late");
    QVERIFY2(late.said(at(ring + 1, 0)), qPrintable(late.out()));
    QVERIFY2(!late.out().contains("ddprun"), qPrintable(late.out()));
  }

  // The teacher sees who joined, by the names they chose, as plain text: markup is
  // shown as typed, control characters are gone (issue 49).
  void testNamesAreShownAsPlainText() {
    MainWindow teacher(QDir::tempPath());
    QString error;
    QVERIFY2(teacher.part<LearnPage>()->classroom()->teach(0, &error, QHostAddress::LocalHost), qPrintable(error));
    ClassroomServer* server = teacher.part<LearnPage>()->classroom()->server();
    Student bo(server->port(), server->code(), QString("<b>Bo</b>\x07<img src=x>"));
    Student ana(server->port(), server->code(), QString("Ana"));
    QTRY_COMPARE_WITH_TIMEOUT(server->studentCount(), 2, 20000);
    QLabel* bar = nullptr;
    for (QLabel* l : teacher.findChildren<QLabel*>())
      if (l->text().startsWith("Class at ")) bar = l;
    QVERIFY(bar);
    QTRY_VERIFY2(bar->text().contains("2 students: "), qPrintable(bar->text()));
    QVERIFY2(bar->text().contains("<b>Bo</b> <img src=x>") && bar->text().contains("Ana"), qPrintable(bar->text()));
    QVERIFY(!bar->text().contains(QChar(7)));
    QCOMPARE(bar->textFormat(), Qt::PlainText);
  }

  void testAClassOfFifty() {
    ClassroomServer server;
    QString error;
    QVERIFY2(server.open(QHostAddress::LocalHost, 0, &error), qPrintable(error));
    std::vector<std::unique_ptr<ClassroomClient>> clients;
    for (int i = 0; i < 50; ++i) {
      clients.push_back(std::make_unique<ClassroomClient>());
      clients.back()->join("127.0.0.1", server.port(), server.code(), QString("student %1").arg(i));
    }
    QTRY_COMPARE_WITH_TIMEOUT(server.studentCount(), 50, 30000);
    server.setState("ddpscope:learn?lesson=4&step=12", false);
    QTRY_VERIFY_WITH_TIMEOUT(std::all_of(clients.begin(), clients.end(),
                                         [](const auto& c) { return c->link() == "ddpscope:learn?lesson=4&step=12"; }),
                             20000);
    const int question = server.ask(12);
    QTRY_VERIFY_WITH_TIMEOUT(
        std::all_of(clients.begin(), clients.end(), [&](const auto& c) { return c->question() == question; }), 20000);
    for (int i = 0; i < 50; ++i)
      clients[size_t(i)]->answer(i % 5 == 0 ? "block 1" : "block 2");
    QTRY_COMPARE_WITH_TIMEOUT(server.answers().value("block 2"), 40, 20000);
    QCOMPARE(server.answers().value("block 1"), 10);
    // A new question clears the count; an answer carrying another question's number is
    // not counted for it.
    const int next = server.ask(13);
    QCOMPARE(server.answers().size(), 0);
    QTRY_VERIFY_WITH_TIMEOUT(
        std::all_of(clients.begin(), clients.end(), [&](const auto& c) { return c->question() == next; }), 20000);
    QTcpSocket raw;
    raw.connectToHost("127.0.0.1", server.port());
    QVERIFY(raw.waitForConnected(5000));
    raw.write(QString(R"({"type": "join", "code": "%1", "name": "raw"})"
                      "\n")
                  .arg(server.code())
                  .toUtf8());
    raw.write(QString(R"({"type": "answer", "question": %1, "choice": "stale"})"
                      "\n")
                  .arg(next - 1)
                  .toUtf8());
    clients[0]->answer("block 3");
    QTRY_COMPARE_WITH_TIMEOUT(server.answers().value("block 3"), 1, 10000);
    QTest::qWait(200);
    QVERIFY(!server.answers().contains("stale"));
    QCOMPARE(server.studentCount(), 51);
  }
};

QTEST_MAIN(TestClassroom)
#include "tst_classroom.moc"
