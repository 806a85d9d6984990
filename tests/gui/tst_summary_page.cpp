// The Summary tab on a real NCCL job's traces: its figures are the GPU's, and each of the
// longest GPU gaps is a link that shows it in the timeline, selected as the range.
#include <QtTest/QtTest>

#include "timeline_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::timeline_fixture;

class TestSummaryPage : public TimelineTest {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // A real NCCL job's traces: the Summary's figures are the GPU's, and each of the
  // longest GPU gaps is a link that shows it in the timeline, selected as the range.
  void testGpuGapsAreAClickFromTheTimeline() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
    QVERIFY(window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/hta_nccl_of_128"));
    QVERIFY(finished.wait(60000));
    QVERIFY(window.currentRun());
    const auto& gaps = window.currentRun()->gpu.longest_gaps;
    QVERIFY(gaps.size() >= 2);
    window.showTab("Summary");
    SummaryPage* summary = window.findChild<SummaryPage*>();
    QVERIFY(summary);
    QVERIFY(summary->text().contains("are the <b>GPU's</b>"));
    QVERIFY(summary->text().contains("CPU comm"));
    const auto& g = gaps[1];
    const QString link = QString("gap:%1:%2:%3").arg(g.rank).arg(g.begin_ns).arg(g.end_ns);
    QVERIFY2(summary->text().contains(link), qPrintable(link));
    emit summary->linkActivated(link);
    QCOMPARE(window.part<QTabWidget>("tabs")->currentIndex(), window.tabIndex("timeline"));
    QCOMPARE(window.part<TimelinePage>()->view()->rangeBegin(), g.begin_ns);
    QCOMPARE(window.part<TimelinePage>()->view()->rangeEnd(), g.end_ns);
    QVERIFY(window.part<TimelinePage>()->view()->axis().begin_ns <= g.begin_ns &&
            window.part<TimelinePage>()->view()->axis().end_ns >= g.end_ns);
    // The Breakdown and the Ranks tab split the GPU's time, and name the one straggler.
    window.showTab("Breakdown");
    bool gpuHeadline = false;
    for (QLabel* label : window.part<TimeBreakdownPage>()->findChildren<QLabel*>())
      gpuHeadline = gpuHeadline ||
                    (label->text().contains("From the GPU's kernels") && label->text().contains("Straggler: rank 1"));
    QVERIFY(gpuHeadline);
    window.showTab("Ranks");
    auto* metric = window.part<RanksPage>()->findChild<QComboBox*>();
    QVERIFY(metric && metric->findText("GPU computation") >= 0 && metric->findText("forward") < 0);
  }
};

DDPSCOPE_TEST_MAIN(TestSummaryPage)
#include "tst_summary_page.moc"
