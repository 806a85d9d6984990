// The Learn page's class, a teacher's window (in this process) and students' apps
// (separate `ddpscope --join` processes, offscreen): students follow the teacher's lesson
// and step, step freely and are called back, answer the teacher's question for the
// class's chart, one who steps away is shown away, and one who joins late sees the
// teacher's lesson at once.
#include <QtTest/QtTest>

#include "classroom_students.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::classroom_students;

class TestClassroomController : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void testStudentsFollowTheTeacher() {
    QTemporaryDir dir;
    MainWindow teacher(dir.path());
    QString error;
    QVERIFY2(teacher.part<ClassroomController>()->teach(0, &error), qPrintable(error));
    ClassroomServer* server = teacher.part<ClassroomController>()->server();
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
    QVERIFY2(teacher.part<ClassroomController>()->teach(0, &error), qPrintable(error));
    QVERIFY(teacher.openLesson(0));
    for (int i = 0; i < 3; ++i)
      teacher.part<LearnPage>()->stepForward();
    MainWindow student(dir.path());
    student.show();
    QVERIFY2(student.part<ClassroomController>()->join(
                 QString("127.0.0.1:%1").arg(teacher.part<ClassroomController>()->server()->port()),
                 teacher.part<ClassroomController>()->server()->code(), "Dana", &error),
             qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(student.part<LearnPage>()->applied(), teacher.part<LearnPage>()->applied(), 10000);
    // The class bar on the Learn page, both sides (issue 50): where, how to join, who.
    const quint16 port = teacher.part<ClassroomController>()->server()->port();
    QVERIFY(teacher.part<ClassroomController>()->bar() &&
            teacher.part<ClassroomController>()->bar()->isVisibleTo(teacher.part<LearnPage>()));
    QTRY_VERIFY2_WITH_TIMEOUT(teacher.part<ClassroomController>()->bar()->text().contains("1 student: Dana"),
                              qPrintable(teacher.part<ClassroomController>()->bar()->text()), 10000);
    QVERIFY2(teacher.part<ClassroomController>()->bar()->text().contains(
                 QString(":%1 (listening on every interface) · join code %2")
                     .arg(port)
                     .arg(teacher.part<ClassroomController>()->server()->code())),
             qPrintable(teacher.part<ClassroomController>()->bar()->text()));
    QVERIFY2(teacher.part<ClassroomController>()->bar()->joinLine().startsWith("ddpscope --join ") &&
                 teacher.part<ClassroomController>()->bar()->joinLine().endsWith(
                     QString(":%1 --code %2 --name YOUR-NAME")
                         .arg(port)
                         .arg(teacher.part<ClassroomController>()->server()->code())),
             qPrintable(teacher.part<ClassroomController>()->bar()->joinLine()));
    QVERIFY(student.part<ClassroomController>()->bar() &&
            student.part<ClassroomController>()->bar()->isVisibleTo(student.part<LearnPage>()));
    QTRY_VERIFY2_WITH_TIMEOUT(student.part<ClassroomController>()->bar()->text().startsWith(
                                  QString("In class at 127.0.0.1:%1 as Dana · following the teacher").arg(port)),
                              qPrintable(student.part<ClassroomController>()->bar()->text()), 10000);
    // The teacher asks about the next node to run (stepping on to a NodeRuns step first).
    LearnPage* own = teacher.part<LearnPage>();
    while (own->lesson().steps[own->applied()].kind != StepKind::NodeRuns)
      own->stepForward();
    QTRY_COMPARE_WITH_TIMEOUT(student.part<LearnPage>()->applied(), own->applied(), 10000);
    QVERIFY(teacher.part<ClassroomController>()->ask() > 0);
    QTRY_VERIFY_WITH_TIMEOUT(student.part<LearnPage>()->isAskingPrediction(), 10000);
    const LessonStep& next = student.part<LearnPage>()->lesson().steps[student.part<LearnPage>()->applied()];
    emit student.part<LearnPage>()->graph()->nodeIndexClicked(next.node);
    QTRY_COMPARE_WITH_TIMEOUT(teacher.part<ClassroomController>()->server()->answers().size(), 1, 10000);
    const QString choice = teacher.part<ClassroomController>()->server()->answers().firstKey();
    QVERIFY2(choice.contains(QString::fromStdString(own->lesson().graph.nodes[size_t(next.node)].op)),
             qPrintable(choice));
    QChartView* chart = nullptr;  // the answers' window's chart (the tabs have charts of their own)
    for (QChartView* v : teacher.findChildren<QChartView*>())
      if (v->window()->windowTitle() == "The class's answers") chart = v;
    QVERIFY(chart && chart->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(chart->chart()->title().startsWith("1 of 1 student answered"), 5000);
    // Whole students on the axis: ticks 0 and 1 (5 ticks from 0 to 1 read "0 0 0 0 1").
    const auto axes = chart->chart()->axes(Qt::Horizontal);
    QCOMPARE(axes.size(), 1);
    const auto* counts = qobject_cast<QValueAxis*>(axes.front());
    QVERIFY(counts);
    QCOMPARE(counts->tickType(), QValueAxis::TicksDynamic);
    QCOMPARE(counts->tickInterval(), 1.0);
    QCOMPARE(counts->max(), 1.0);
    QVERIFY2(
        teacher.part<ClassroomController>()->bar()->text().contains(QString("Answers (1 of 1): %1: 1").arg(choice)),
        qPrintable(teacher.part<ClassroomController>()->bar()->text()));
    // Revealed: the teacher's page takes the step, no longer asking, and the class follows.
    const size_t asked = own->applied();
    QPushButton* reveal = nullptr;
    for (QPushButton* b : chart->window()->findChildren<QPushButton*>())
      if (b->text() == "Reveal the step") reveal = b;
    QVERIFY(reveal);
    reveal->click();
    QCOMPARE(own->applied(), asked + 1);
    QVERIFY(!own->isAskingPrediction());
    QTRY_COMPARE_WITH_TIMEOUT(student.part<LearnPage>()->applied(), asked + 1, 10000);
  }

  // A following student who steps on their own stops following, says so, and the teacher's
  // bar shows where they are; the teacher's steps no longer move them until they follow
  // again (issue 68: they could step ahead while the bar still said "following").
  void testAStudentWhoStepsAwayIsShownAway() {
    QTemporaryDir dir;
    MainWindow teacher(dir.path());
    QString error;
    QVERIFY2(teacher.part<ClassroomController>()->teach(0, &error, QHostAddress::LocalHost), qPrintable(error));
    QVERIFY(teacher.openLesson(0));
    LearnPage* own = teacher.part<LearnPage>();
    for (int i = 0; i < 3; ++i)
      own->stepForward();
    MainWindow student(dir.path());
    LearnPage* theirs = student.part<LearnPage>();
    ClassroomController* mine = student.part<ClassroomController>();
    QVERIFY2(mine->join(QString("127.0.0.1:%1").arg(teacher.part<ClassroomController>()->server()->port()),
                        teacher.part<ClassroomController>()->server()->code(), "Dana", &error),
             qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(theirs->applied(), size_t{3}, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(mine->bar()->text().contains("following the teacher"), 10000);
    QVERIFY(!mine->isOnOwn());
    theirs->stepForward();  // ahead of the teacher
    QCOMPARE(theirs->applied(), size_t{4});
    QVERIFY(mine->isOnOwn());
    QVERIFY2(mine->bar()->text().contains("on your own (the teacher is at step 3"), qPrintable(mine->bar()->text()));
    QTRY_VERIFY2_WITH_TIMEOUT(
        teacher.part<ClassroomController>()->bar()->text().contains("Dana (on their own at step 4)"),
        qPrintable(teacher.part<ClassroomController>()->bar()->text()), 10000);
    // The teacher steps on: the student stays where they went, and is told where the teacher is.
    own->stepForward();
    own->stepForward();
    QTRY_VERIFY2_WITH_TIMEOUT(mine->bar()->text().contains("the teacher is at step 5"), qPrintable(mine->bar()->text()),
                              10000);
    QCOMPARE(theirs->applied(), size_t{4});
    // Back to following: at the teacher's step, and the teacher's bar says so.
    mine->followAgain();
    QTRY_COMPARE_WITH_TIMEOUT(theirs->applied(), size_t{5}, 10000);
    QVERIFY(!mine->isOnOwn());
    QVERIFY2(mine->bar()->text().contains("following the teacher"), qPrintable(mine->bar()->text()));
    QTRY_VERIFY2_WITH_TIMEOUT(!teacher.part<ClassroomController>()->bar()->text().contains("on their own"),
                              qPrintable(teacher.part<ClassroomController>()->bar()->text()), 10000);
    own->stepForward();
    QTRY_COMPARE_WITH_TIMEOUT(theirs->applied(), size_t{6}, 10000);
  }

  // A student who joins sees the teacher's lesson and step at once, not the lesson's run
  // as "a run of your own" until the teacher steps (issue 50).
  void testAJoiningStudentSeesTheTeachersLessonAtOnce() {
    QTemporaryDir dir;
    MainWindow teacher(dir.path());
    const int ring = int(std::find_if(lessons().begin(), lessons().end(), [](const LessonInfo& i) { return i.ring; }) -
                         lessons().begin());
    QString error;
    QVERIFY2(teacher.part<ClassroomController>()->teach(0, &error, QHostAddress::LocalHost), qPrintable(error));
    QVERIFY(teacher.openLesson(ring));  // after the class began: what the class is told then
    Student late(teacher.part<ClassroomController>()->server()->port(),
                 teacher.part<ClassroomController>()->server()->code(), "Late");
    QVERIFY2(late.said(at(ring + 1, 0)), qPrintable(late.out()));
    QVERIFY2(!late.out().contains("ddprun"), qPrintable(late.out()));
  }
};

DDPSCOPE_TEST_MAIN(TestClassroomController)
#include "tst_classroom_controller.moc"
