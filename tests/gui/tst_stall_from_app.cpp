// A stall launched from the app (issue 65): a job whose rank 1 stops 30 s in iteration 10,
// started as the Launch dialog starts it (its extra options). While it stalls, the Hang tab
// says rank 0 waits for rank 1 and the wait grows; once it has ended, every page that speaks
// of the run's time names the stall with its iteration, and no mean carries it (the 30 s
// over 29 iterations would be a second each).
#include <QtTest/QtTest>

#include <QRegularExpression>

#include "live_job_fixture.h"
#include "ranks_page.h"
#include "summary_page.h"
#include "test_registry.h"
#include "time_breakdown_page.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::live_job_fixture;

class TestStallFromApp : public LiveJobTest {
  Q_OBJECT

  // Every label of the Hang tab, as one text.
  static QString hangText(MainWindow& window) {
    QString text;
    for (QLabel* label : window.part<HangView>()->findChildren<QLabel*>())
      text += label->text() + "\n";
    return text;
  }

 private slots:
  void initTestCase() { qputenv("DDPSCOPE_CLI", DDPSCOPE_CLI_PATH); }

  void testAStallOnEveryPage() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    window.show();
    LaunchConfig job = smallJob(30);
    job.extraArguments = "--inject-stall 1:10:30";
    QString error;
    QVERIFY2(window.launchJob(job, &error), qPrintable(error));

    // During the stall: the Hang tab names rank 1 as the one rank 0 waits for.
    window.showTab("Hang");
    QTRY_VERIFY2_WITH_TIMEOUT(
        hangText(window).contains(QRegularExpression("Rank 1 never called allreduce [^ ]+ #\\d+, which rank 0 called")),
        qPrintable(hangText(window)), 60000);
    QVERIFY2(window.part<JobController>()->isActive(), "the job ended before its stall was seen");

    QTRY_COMPARE_WITH_TIMEOUT(window.part<JobController>()->state(), JobController::State::Finished, 120000);
    QTRY_COMPARE_WITH_TIMEOUT(window.currentRun()->run.status, std::string("finished"), 10000);
    const QRegularExpression stall(
        "iteration 10: rank 1 stalled (29|30|31)\\.\\d s \\([a-z_]+\\); rank 0 waited in allreduce #");
    const QString summary = window.findChild<SummaryPage*>()->text();
    QVERIFY2(summary.contains(stall) && summary.contains("Stalled: iteration 10, rank 1"), qPrintable(summary));
    window.showTab("Breakdown");
    auto* breakdown = window.part<TimeBreakdownPage>();
    QVERIFY2(breakdown->headline()->text().contains("Stalled: iteration 10, rank 1"),
             qPrintable(breakdown->headline()->text()));
    for (const auto& r : breakdown->bars()->rows())
      QVERIFY2(r.iteration_ms < 100, qPrintable(QString("rank %1: %2 ms").arg(r.rank).arg(r.iteration_ms)));
    window.showTab("Ranks");
    QVERIFY(window.part<RanksPage>()->headline().contains("Stalled: iteration 10, rank 1"));
    window.showTab("Live");
    const QString live = window.part<LiveMonitor>()->verdictLabel()->text();
    QVERIFY2(live.contains("Stalled: iteration 10, rank 1"), qPrintable(live));
    window.showTab("Hang");
    const QString hang = hangText(window);
    QVERIFY2(hang.contains("Nothing is pending now, but the job stalled: ") && hang.contains(stall), qPrintable(hang));
  }
};

DDPSCOPE_TEST_MAIN(TestStallFromApp)
#include "tst_stall_from_app.moc"
