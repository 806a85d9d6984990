// Run live's recorder: it re-records a menu lesson through ddpscope-cli into a new run in
// the workspace and says when that ends; one recording at a time; without a CLI, or with
// one that cannot start, it says so instead of waiting; and a recording still going when
// the recorder goes is stopped.
#include <QtTest/QtTest>

#include <QTemporaryDir>
#include <cerrno>
#include <csignal>

#include "lesson_catalog.h"
#include "lesson_live_recorder.h"
#include "run_store_reader.h"
#include "test_registry.h"

using namespace ddpscope::gui;

class TestLessonLiveRecorder : public QObject {
  Q_OBJECT
  QTemporaryDir m_workspace;

 private slots:
  void testALessonIsRecordedIntoTheWorkspace() {
    LessonLiveRecorder recorder(m_workspace.path(), QStringLiteral(DDPSCOPE_CLI_PATH));
    QVERIFY(recorder.available());
    QSignalSpy started(&recorder, &LessonLiveRecorder::started);
    QSignalSpy finished(&recorder, &LessonLiveRecorder::finished);
    QString error;
    const LessonInfo& seed = lessons().front();
    QVERIFY2(recorder.start(seed, LiveParameters{}, &error), qPrintable(error));
    QCOMPARE(started.count(), 1);
    QVERIFY2(started.at(0).at(0).toString().startsWith("Recording seed on 2 workers"),
             qPrintable(started.at(0).at(0).toString()));
    QVERIFY(recorder.isRecording());
    QVERIFY(!recorder.start(seed, LiveParameters{}, &error));  // one at a time
    QVERIFY2(error.contains("still going"), qPrintable(error));
    QVERIFY(finished.wait(120000));
    const QString out = finished.at(0).at(0).toString();
    QCOMPARE(finished.at(0).at(1).toInt(), 0);
    QVERIFY2(out.startsWith(m_workspace.path() + "/lesson-seed-"), qPrintable(out));
    ddpscope::probes::RunStoreReader run(out.toStdString());
    QCOMPARE(run.run().status, std::string("finished"));
  }

  void testWithoutACliItSaysSo() {
    LessonLiveRecorder recorder(m_workspace.path(), QString());
    QVERIFY(!recorder.available());
    QString error;
    QVERIFY(!recorder.start(lessons().front(), LiveParameters{}, &error));
    QVERIFY2(error.contains("DDPSCOPE_CLI"), qPrintable(error));
  }

  void testACliThatCannotStartEndsTheRecording() {
    LessonLiveRecorder recorder(m_workspace.path(), m_workspace.filePath("no-such-cli"));
    QSignalSpy finished(&recorder, &LessonLiveRecorder::finished);
    QString error;
    QVERIFY(recorder.start(lessons().front(), LiveParameters{}, &error));
    QVERIFY(finished.wait(10000));
    QVERIFY(finished.at(0).at(1).toInt() != 0);
    QVERIFY2(finished.at(0).at(2).toString().contains("no-such-cli"), qPrintable(finished.at(0).at(2).toString()));
    QVERIFY(!recorder.isRecording());
  }

  void testARecordingStillGoingIsStopped() {
    qint64 pid = 0;
    {
      LessonLiveRecorder recorder(m_workspace.path(), QStringLiteral(DDPSCOPE_CLI_PATH));
      QString error;
      QVERIFY(recorder.start(lessons().front(), LiveParameters{}, &error));
      auto* process = recorder.findChild<QProcess*>();
      QVERIFY(process && process->waitForStarted(10000));
      pid = process->processId();
      QVERIFY(pid > 0);
    }
    errno = 0;
    QCOMPARE(::kill(static_cast<pid_t>(pid), 0), -1);  // gone, and reaped
    QCOMPARE(errno, ESRCH);
  }
};

DDPSCOPE_TEST_MAIN(TestLessonLiveRecorder)
#include "tst_lesson_live_recorder.moc"
