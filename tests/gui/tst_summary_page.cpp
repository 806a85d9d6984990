// The Summary tab on a real NCCL job's traces: its figures are the GPU's, and each of the
// longest GPU gaps is a link that shows it in the timeline, selected as the range. And on a
// job the test slows on purpose: the rank that waits is shown waiting, not transferring. A
// run of flight dumps, which has no timings, says what it holds instead of a table of zeros.
#include <QtTest/QtTest>

#include <QProcess>
#include <QRegularExpression>

#include "collective_bandwidth.h"
#include "ranks_page.h"
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
    // The Breakdown and the Ranks tab split the GPU's time, and name the one straggler: rank 1,
    // whose backward kernels ran longer (the verdict from the NCCL kernels' starts).
    QVERIFY2(summary->text().contains("<b>Why:</b> Rank 1 gates 1 of 2 iterations: in those, it spends") &&
                 summary->text().contains("per iteration in backward"),
             qPrintable(summary->text()));
    window.showTab("Breakdown");
    const QString headline = window.part<TimeBreakdownPage>()->headline()->text();
    QVERIFY2(headline.contains("From the GPU's kernels") && headline.contains("Rank 1 gates") &&
                 headline.contains("Rank 1, the one the others wait for, took"),
             qPrintable(headline));
    window.showTab("Ranks");
    auto* metric = window.part<RanksPage>()->findChild<QComboBox*>();
    QVERIFY(metric && metric->findText("GPU computation") >= 0 && metric->findText("forward") < 0);
  }

  // A folder of PyTorch 2.11's own flight dumps (rank 2 left none): no table of zeros, but
  // what the run holds, the verdict, and the missing dump (issue 68); the header leaves out
  // what the dumps do not record (it read "model  · started ").
  void testARunWithoutTimingsSaysWhatItHolds() {
    QTemporaryDir work;
    MainWindow window(work.path());
    QVERIFY(window.openPath(DDPSCOPE_SOURCE_DIR "/tests/probes/data/torch_2_11_flight/gloo-4-size/pickle"));
    window.showTab("Summary");
    SummaryPage* summary = window.findChild<SummaryPage*>();
    QVERIFY(summary);
    const QString html = summary->text();
    QVERIFY2(html.contains("<b>No timings:</b> this run holds no iterations, only what its 3 ranks recorded"),
             qPrintable(html));
    QVERIFY2(html.contains("Group &#x27;0&#x27; collective #19: size mismatch") ||
                 html.contains("Group '0' collective #19: size mismatch"),
             qPrintable(html));
    QVERIFY2(html.contains("no dump of rank 2"), qPrintable(html));
    QVERIFY2(!html.contains("0.000") && !html.contains("mean iteration"), qPrintable(html));
    QVERIFY2(html.contains("status <b>"), qPrintable(html));
    QVERIFY2(!html.contains("model  ·") && !html.contains(" ·  ·") && !html.contains("started </p>"), qPrintable(html));
  }

  // Rank 1 sleeps 40 ms in every forward (`train --inject-slow`): rank 0's exposed
  // communication is shown as waiting for it (at least 60% of the sleep: a test beside this
  // one may slow rank 0 too), rank 1 hardly waits, and the page says what waiting means.
  void testAWaitingRankIsShownWaiting() {
    QTemporaryDir dir;
    const QString file = dir.filePath("slow.ddprun");
    QProcess job;
    job.start(DDPSCOPE_CLI_PATH, {"train", "--np", "2", "--iters", "12", "--width", "256", "--depth", "3",
                                  "--inject-slow", "1:forward:40", "--out", file, "--progress", "lines"});
    QVERIFY(job.waitForFinished(240000));
    QVERIFY2(job.exitCode() == 0, job.readAllStandardError().constData());
    MainWindow window{QString()};
    QVERIFY(window.openRun(file));
    window.showTab("Summary");
    SummaryPage* summary = window.findChild<SummaryPage*>();
    QVERIFY(summary);
    const QString html = summary->text();
    QVERIFY2(html.contains("of it waiting (ms)") && html.contains("A rank that mostly waits is not slow itself"),
             qPrintable(html));
    // A rank's row: rank, host, iterations, iteration, compute, comm, exposed, waiting, transfer, ...
    const auto cells = [&html](int rank) {
      QStringList out;
      const int at = html.indexOf(QString("<tr><td>%1</td>").arg(rank));
      const int end = html.indexOf("</tr>", at);
      if (at < 0 || end < 0) return out;
      auto it = QRegularExpression("<td>([^<]*)</td>").globalMatch(html.mid(at, end - at));
      while (it.hasNext())
        out << it.next().captured(1);
      return out;
    };
    const QStringList r0 = cells(0), r1 = cells(1);
    QVERIFY2(r0.size() > 8 && r1.size() > 8, qPrintable(html));
    const double exposed0 = r0[6].toDouble(), wait0 = r0[7].toDouble(), wait1 = r1[7].toDouble();
    const QString said = QString("rank 0: exposed %1, waiting %2; rank 1 waiting %3").arg(r0[6], r0[7], r1[7]);
    QVERIFY2(wait0 >= 24 && wait0 >= 0.6 * exposed0, qPrintable(said));
    QVERIFY2(wait0 - wait1 >= 20, qPrintable(said));
    // Each rank's bus bandwidth (after overlap): its bucket allreduces of 64 KiB or more past
    // its first iteration, bytes over the time from the last rank's arrival to its end (2
    // ranks: the allreduce's factor 2(n-1)/n is 1), summed here from the run's buckets.
    std::pair<double, int> lowest{1e300, -1};
    for (int rank : {0, 1}) {
      double bytes = 0, ns = 0;
      int64_t first = INT64_MAX;
      for (const auto& b : window.currentRun()->analysis.buckets)
        if (b.rank == rank) first = std::min(first, b.iteration);
      for (const auto& b : window.currentRun()->analysis.buckets) {
        if (b.rank != rank || b.iteration == first || b.bytes < 65536 || b.end_ns <= b.last_arrival_ns) continue;
        bytes += static_cast<double>(b.bytes);
        ns += static_cast<double>(b.end_ns - b.last_arrival_ns);
      }
      QVERIFY2(ns > 0, "no bucket allreduce of 64 KiB or more to time");
      QCOMPARE(cells(rank)[10], QString::fromStdString(ddpscope::probes::rate_text(bytes / ns)));
      lowest = std::min(lowest, std::make_pair(bytes / ns, rank));
    }
    // The Ranks tab sums the ranks up the same way.
    window.showTab("Ranks");
    const QString ranks = window.part<RanksPage>()->headline();
    QVERIFY2(ranks.contains(QString("Bus bandwidth in bucket allreduces: lowest rank %1 at %2, median ")
                                .arg(lowest.second)
                                .arg(QString::fromStdString(ddpscope::probes::rate_text(lowest.first)))),
             qPrintable(ranks));
    // The page opens with the cause, not the victim; the Breakdown says the same, and tells
    // rank 1's parts, never calling rank 0 (the one that waits) the slowest.
    QVERIFY2(html.contains(QRegularExpression("<b>Why:</b> Rank 1 gates \\d+ of \\d+ iterations: it spends [\\d.]+ ms "
                                              "per iteration in forward")),
             qPrintable(html));
    QVERIFY2(html.indexOf("Why:") < html.indexOf("<table"), qPrintable(html));
    window.showTab("Breakdown");
    const QString headline = window.part<TimeBreakdownPage>()->headline()->text();
    QVERIFY2(headline.contains("Rank 1 gates") && headline.contains("Rank 1, the one the others wait for, took") &&
                 !headline.contains("slowest"),
             qPrintable(headline));
  }
};

DDPSCOPE_TEST_MAIN(TestSummaryPage)
#include "tst_summary_page.moc"
