// `ddpscope-cli lesson show|list` hands the work to ddpscope-lesson beside it; a CLI
// installed without the app says what it needs and where it looked.
#include <QtTest/QtTest>

#include "lesson_report_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::BatchEvent;
using ddpscope::probes::EventBatch;
using ddpscope::probes::RunStoreReader;
using ddpscope::probes::RunStoreWriter;
using namespace ddpscope::gui::lesson_report_fixture;

class TestLessonShow : public LessonReportTest {
  Q_OBJECT

 private slots:

  // A CLI installed without the app: lesson show says what it needs and where it looked.
  void testWithoutTheLessonProgramItIsSaid() {
    QTemporaryDir dir;
    const QString alone = dir.filePath("ddpscope-cli");
    QVERIFY(QFile::copy(QStringLiteral(DDPSCOPE_CLI_PATH), alone));
    QFile::setPermissions(alone, QFile::permissions(alone) | QFileDevice::ExeUser);
    QProcess p;
    p.start(alone, {"lesson", "list"});
    QVERIFY(p.waitForFinished(30000));
    const QString err = QString::fromUtf8(p.readAllStandardError());
    QCOMPARE(p.exitCode(), 2);
    QVERIFY2(err.contains("built with the app (DDPSCOPE_WITH_GUI=ON)") && err.contains(dir.filePath("ddpscope-lesson")),
             qPrintable(err));
  }
};

DDPSCOPE_TEST_MAIN(TestLessonShow)
#include "tst_lesson_show.moc"
