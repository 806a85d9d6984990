// The class bar on the teacher's Learn page: where the class listens (one address or every
// interface) and its join code, and who joined, by the names they chose, as plain text.
#include <QtTest/QtTest>

#include "class_bar.h"

#include "classroom_students.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::classroom_students;

class TestClassBar : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  // The teacher chooses the interface; the class bar says where the class listens.
  void testTheClassBarSaysWhereItListens() {
    MainWindow teacher(QDir::tempPath());
    QString error;
    QVERIFY2(teacher.part<ClassroomController>()->teach(0, &error, QHostAddress::LocalHost), qPrintable(error));
    QCOMPARE(teacher.part<ClassroomController>()->server()->listeningOn(), QHostAddress(QHostAddress::LocalHost));
    const auto bar = [&] {
      for (QLabel* l : teacher.findChildren<QLabel*>())
        if (l->text().startsWith("Class at ")) return l->text();
      return QString();
    };
    QVERIFY2(bar().startsWith(QString("Class at 127.0.0.1:%1 (listening on that address only) · join code %2")
                                  .arg(teacher.part<ClassroomController>()->server()->port())
                                  .arg(teacher.part<ClassroomController>()->server()->code())),
             qPrintable(bar()));
    QVERIFY(teacher.part<ClassroomController>()->teach(0, &error));
    QVERIFY2(bar().contains("(listening on every interface)"), qPrintable(bar()));
  }

  // The teacher sees who joined, by the names they chose, as plain text: markup is
  // shown as typed, control characters are gone (issue 49).
  void testNamesAreShownAsPlainText() {
    MainWindow teacher(QDir::tempPath());
    QString error;
    QVERIFY2(teacher.part<ClassroomController>()->teach(0, &error, QHostAddress::LocalHost), qPrintable(error));
    ClassroomServer* server = teacher.part<ClassroomController>()->server();
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

  // The bar alone: the teacher's lines and the students' command, a student's line, the
  // answers counted, and nothing when there is no class.
  void testWhatTheBarSays() {
    ClassBar bar;
    bar.showTeaching("10.0.0.5 or 192.168.1.20:47123", "listening on every interface", "ab-cd", {});
    QCOMPARE(bar.text(), QString("Teaching at 10.0.0.5 or 192.168.1.20:47123 (listening on every interface) · join "
                                 "code ab-cd\nNo student has joined yet."));
    QCOMPARE(bar.joinLine(), QString("ddpscope --join 10.0.0.5:47123 --code ab-cd --name YOUR-NAME"));
    bar.showTeaching("10.0.0.5:47123", "that address only", "ab-cd", {"Ana", "Bo"});
    QVERIFY2(bar.text().endsWith("2 students: Ana, Bo"), qPrintable(bar.text()));
    bar.showAnswers({{"AddBackward0 on worker 1", 2}, {"MulBackward0 on worker 0", 1}}, 4);
    QVERIFY2(bar.text().endsWith("Answers (3 of 4): AddBackward0 on worker 1: 2 · MulBackward0 on worker 0: 1"),
             qPrintable(bar.text()));
    bar.showAnswers({}, 4);
    QVERIFY(!bar.text().contains("Answers"));
    bar.showJoined("10.0.0.5:47123", "Ana", "following the teacher");
    QCOMPARE(bar.text(), QString("In class at 10.0.0.5:47123 as Ana · following the teacher"));
    QVERIFY(bar.joinLine().isEmpty());
    bar.showNoClass();
    QVERIFY(bar.isHidden());
  }
};

DDPSCOPE_TEST_MAIN(TestClassBar)
#include "tst_class_bar.moc"
