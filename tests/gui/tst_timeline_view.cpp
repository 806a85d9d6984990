// The timeline view on a run shown in the app: marks drawn as labelled lines, selection
// and inspection as in Perfetto, the keys that move it and a drag that measures a range,
// search, and ranks collapsed by a click on their header.
#include <QtTest/QtTest>

#include "timeline_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::timeline_fixture;

namespace {

// Ruler labels that overlap each other or the range's length, or leave the time axis.
QStringList rulerLabelProblems(const TimelineView* view) {
  QStringList problems;
  const auto labels = view->rulerLabels();
  const QRectF badge = view->rangeBadgeRect();
  const double left = TimelineView::kLabelWidth, right = left + view->axis().width_px;
  for (size_t i = 0; i < labels.size(); ++i) {
    const QRectF& r = labels[i].rect;
    const QString where = QStringLiteral("\"%1\" at %2..%3").arg(labels[i].text).arg(r.left()).arg(r.right());
    if (r.left() < left || r.right() > right)
      problems << QStringLiteral("%1 leaves the axis (%2..%3)").arg(where).arg(left).arg(right);
    if (!badge.isEmpty() && r.intersects(badge))
      problems
          << QStringLiteral("%1 under the range's length (%2..%3)").arg(where).arg(badge.left()).arg(badge.right());
    for (size_t j = i + 1; j < labels.size(); ++j)
      if (r.intersects(labels[j].rect)) problems << QStringLiteral("%1 over \"%2\"").arg(where, labels[j].text);
  }
  return problems;
}

}  // namespace

class TestTimelineView : public TimelineTest {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // A mark (here an injected stall) is drawn as a red line through
  // its lane with its name beside it, not as an unlabelled tick.
  void testTimelineLabelsMarks() {
    QTemporaryDir folder;
    const QString file = folder.filePath("marked.ddprun");
    {
      ddpscope::probes::RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      testing::write_iterations(w, 0, 1, 3);
      ddpscope::probes::EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "compute"}};
      b.names = {"injected stall"};
      b.events.push_back(
          {1250, 1250, -1, -1, -1, 2, -1, 0, -1, -1, 0, static_cast<uint8_t>(ddpscope::probes::Kind::Mark), 0});
      w.write(b);
      w.end_run("finished");
    }
    MainWindow window(folder.path());
    QVERIFY(showOnTimeline(window, file));
    TimelineView* timeline = window.part<TimelinePage>()->view();
    timeline->fitAll();
    const QImage image = timeline->grab().toImage();
    const int x = TimelineView::kLabelWidth + static_cast<int>(timeline->axis().toPx(1250));
    const int y = timeline->layout().rowTop(0, 0) + 6;  // rank 0's compute lane, where the label sits
    int red = 0;
    for (int dx = -1; dx <= 1; ++dx)
      red += image.pixelColor(x + dx, y + 6) == QColor(0xc6, 0x28, 0x28) ? 1 : 0;
    QVERIFY2(red >= 1, "no red mark line at the mark's time");
    // The label's box: near-white pixels right of the line, over the spans.
    int light = 0;
    for (int dx = 6; dx < 60; ++dx)
      light += image.pixelColor(x + dx, y).lightness() > 200 ? 1 : 0;
    QVERIFY2(light > 20, qPrintable(QString("label box: %1 light pixels").arg(light)));
    // A click on the mark's line (in forward's row) selects the mark,
    // not the span under it.
    QTest::mouseClick(timeline, Qt::LeftButton, Qt::NoModifier,
                      QPoint(x + 1, timeline->layout().rowTop(0, 1) + TrackLayout::kRowHeight / 2));
    const TimelineSpan* picked = timeline->data().resolve(timeline->selection());
    QVERIFY(picked);
    QCOMPARE(picked->kind, ddpscope::probes::Kind::Mark);
    QCOMPARE(timeline->data().nameOf(picked->name), std::string("injected stall"));
    // The ruler names the iteration in view: rank 0's iterations carry their numbers.
    QCOMPARE(timeline->data().iterations.size(), size_t(3));
    for (size_t i = 0; i < 3; ++i)
      QCOMPARE(timeline->data().iterations[i].number, int64_t(i + 1));
  }

  // Spans and marks are selected and inspected as in Perfetto: the details, the parent
  // link, empty space, a bucket-ready tick, the same collective on another rank.
  void testTimelineSelection() {
    AtIteration2 run;
    QVERIFY(run.open());
    TimelinePage* page = run.page;
    TimelineView* view = run.view;
    auto at = [&](int64_t t, int lane, int row) { return pointAt(view, t, lane, row); };
    QVERIFY(page->legend()->text().contains("bucket allreduce"));
    QVERIFY(page->legend()->text().contains("forward"));
    QSignalSpy status(view, &TimelineView::spanClicked);

    // A click on forward selects it; the details panel shows its fields.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, at(2100, 0, 1));
    const TimelineSpan* picked = view->data().resolve(view->selection());
    QVERIFY(picked);
    QCOMPARE(view->data().nameOf(picked->name), std::string("forward"));
    QTreeWidget* details = page->details();
    QCOMPARE(details->topLevelItem(0)->text(1), QString("forward"));
    QStringList fields;
    for (int i = 0; i < details->topLevelItemCount(); ++i)
      fields << details->topLevelItem(i)->text(0);
    for (const char* f : {"Kind", "Rank", "Thread", "Start", "Duration", "Iteration", "Run-file row", "Parent"})
      QVERIFY2(fields.contains(f), f);
    QVERIFY(status.last().at(0).toString().contains("200 ns"));  // the duration, adaptive
    const QPoint p = view->pointOf(view->selection());
    QVERIFY(p.x() > TimelineView::kLabelWidth);
    // The parent link selects the iteration.
    for (int i = 0; i < details->topLevelItemCount(); ++i) {
      if (details->topLevelItem(i)->text(0) == "Parent") emit details->itemActivated(details->topLevelItem(i), 0);
    }
    QCOMPARE(view->data().resolve(view->selection())->kind, ddpscope::probes::Kind::Iteration);
    // Empty space (below the tracks) clears the selection and the status line.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, QPoint(600, view->layout().bottom + 20));
    QVERIFY(!view->selection().valid());
    QVERIFY(status.last().at(0).toString().isEmpty());
    QCOMPARE(details->topLevelItem(0)->text(0), QString("Nothing selected"));
    // The bucket-ready tick at 2640 in the compute lane's strip is selectable.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier,
                      QPoint(TimelineView::kLabelWidth + static_cast<int>(std::lround(view->axis().toPx(2640))),
                             view->layout().stripTop(0) + 3));
    QVERIFY(view->selection().valid());
    QCOMPARE(view->data().resolve(view->selection())->kind, ddpscope::probes::Kind::BucketReady);
    // A bucket allreduce: the same collective on rank 1 is a click away.
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, at(2400, 1, 0));
    QCOMPARE(view->data().resolve(view->selection())->kind, ddpscope::probes::Kind::Allreduce);
    const int64_t seq = view->data().resolve(view->selection())->seq;
    QTreeWidgetItem* others = nullptr;
    for (int i = 0; i < details->topLevelItemCount(); ++i)
      if (details->topLevelItem(i)->text(0) == "On other ranks") others = details->topLevelItem(i);
    QVERIFY(others);
    QCOMPARE(others->childCount(), 1);
    emit details->itemActivated(others->child(0), 0);
    QCOMPARE(view->data().lanes[static_cast<size_t>(view->selection().lane)].rank, 1);
    QCOMPARE(view->data().resolve(view->selection())->seq, seq);
  }

  // The keys move the view as Perfetto's do; a drag measures a range.
  void testTimelineKeysAndRange() {
    AtIteration2 run;
    QVERIFY(run.open());
    TimelinePage* page = run.page;
    TimelineView* view = run.view;
    auto at = [&](int64_t t, int lane, int row) { return pointAt(view, t, lane, row); };
    // Keys: W and S zoom around the centre by 1.5, A and D pan a fifth of the view, F fits.
    view->setFocus();
    view->showIteration(2);
    auto window_ns = [&] { return double(view->axis().end_ns - view->axis().begin_ns); };
    auto centre_ns = [&] { return (view->axis().begin_ns + view->axis().end_ns) / 2.0; };
    double w0 = window_ns(), c0 = centre_ns();
    QTest::keyClick(view, Qt::Key_W);
    QVERIFY(std::abs(window_ns() - w0 / 1.5) < w0 * 0.01);
    QVERIFY(std::abs(centre_ns() - c0) < w0 * 0.01);
    QTest::keyClick(view, Qt::Key_S);
    QVERIFY(std::abs(window_ns() - w0) < w0 * 0.01);
    const int64_t left = view->axis().begin_ns;
    QTest::keyClick(view, Qt::Key_D);
    QVERIFY(std::abs(double(view->axis().begin_ns - left) - w0 / 5) < w0 * 0.01);
    QTest::keyClick(view, Qt::Key_A);
    QTest::keyClick(view, Qt::Key_A);
    QVERIFY(std::abs(double(left - view->axis().begin_ns) - w0 / 5) < w0 * 0.01);
    QTest::keyClick(view, Qt::Key_F);
    QVERIFY(view->axis().begin_ns <= view->data().begin_ns && view->axis().end_ns >= view->data().end_ns);
    QTest::keyClick(view, Qt::Key_Escape);
    QVERIFY(!view->selection().valid());

    // A drag selects a range: its summary table and its duration.
    view->showIteration(2);
    const QPoint from = at(2100, 0, 0), to = at(2600, 0, 0);
    QTest::mousePress(view, Qt::LeftButton, Qt::NoModifier, from);
    QMouseEvent move(QEvent::MouseMove, QPointF(to), view->mapToGlobal(QPointF(to)), Qt::NoButton, Qt::LeftButton,
                     Qt::NoModifier);
    QApplication::sendEvent(view, &move);
    QTest::mouseRelease(view, Qt::LeftButton, Qt::NoModifier, to);
    QVERIFY(view->rangeEnd() > view->rangeBegin());
    QVERIFY(std::abs(view->rangeBegin() - 2100) <= 3 && std::abs(view->rangeEnd() - 2600) <= 3);
    QVERIFY(page->rangeModel()->rowCount() >= 4);  // iteration, forward, backward, allreduce
    QVERIFY(page->rangeHeader()->text().contains("ns"));
    QVERIFY(page->rangeTable()->isSortingEnabled());
    page->rangeTable()->sortByColumn(0, Qt::AscendingOrder);
    QCOMPARE(page->rangeTable()->model()->index(0, 0).data().toString(), QString("allreduce"));
  }

  // Issue 68: the ruler's labels neither overlap nor leave the axis: the range's length is
  // not drawn over its iteration's number, and the time at the window's right end is whole.
  void testRulerLabelsNeitherOverlapNorLeaveTheAxis() {
    AtIteration2 run;
    QVERIFY(run.open());
    TimelineView* view = run.view;
    run.window.resize(1280, 800);
    QApplication::processEvents();
    view->showWindow(0, 6000);   // a tick at each end of the window
    view->setRange(2000, 3000);  // iteration 3, its length centred where its number is
    QStringList problems = rulerLabelProblems(view);
    QStringList texts;
    for (const TimelineView::RulerLabel& label : view->rulerLabels())
      texts << label.text;
    // The labels still there: the iteration's beside the length (its number where its name
    // does not fit), the end's left of its tick.
    QVERIFY2((texts.contains("iteration 3") || texts.contains("3")) && texts.contains("iteration 1"),
             qPrintable(texts.join(" | ")));
    QVERIFY2(texts.last().startsWith("6"), qPrintable(texts.join(" | ")));
    // Narrower: the iterations' bands too narrow for a number beside the length.
    run.window.resize(1024, 700);
    QApplication::processEvents();
    view->showWindow(0, 6000);
    problems << rulerLabelProblems(view);
    QVERIFY2(problems.isEmpty(), qPrintable(problems.join('\n')));
  }

  // Ctrl+F (or /) searches; a click on a rank's header collapses it.
  void testTimelineSearchAndCollapse() {
    AtIteration2 run;
    QVERIFY(run.open());
    TimelinePage* page = run.page;
    TimelineView* view = run.view;
    // Ctrl+F opens the search bar; Enter finds the next finalize, Shift+Enter the previous.
    QTest::keyClick(view, Qt::Key_F, Qt::ControlModifier);
    QVERIFY(page->searchBar()->isVisible());
    QTest::keyClicks(page->searchField(), "finalize");
    QTest::keyClick(page->searchField(), Qt::Key_Return);
    QCOMPARE(page->searchResults().matches.size(), size_t(12));
    const int first = page->currentMatch();
    QVERIFY(first >= 0);
    QCOMPARE(view->data().nameOf(view->data().resolve(view->selection())->name), std::string("finalize"));
    QTest::keyClick(page->searchField(), Qt::Key_Return);
    QCOMPARE(page->currentMatch(), first + 1);
    QTest::keyClick(page->searchField(), Qt::Key_Return, Qt::ShiftModifier);
    QCOMPARE(page->currentMatch(), first);
    QVERIFY(page->searchStatus()->text().contains("of 12"));
    QTest::keyClick(page->searchField(), Qt::Key_Escape);
    QVERIFY(!page->searchBar()->isVisible());
    view->setFocus();
    QTest::keyClick(view, Qt::Key_Slash);
    QVERIFY(page->searchBar()->isVisible());

    // A click on rank 0's header collapses it; another expands it.
    const int header = view->layout().rows[0].y + 5;
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, QPoint(20, header));
    QVERIFY(view->rankCollapsed(0));
    QCOMPARE(view->layout().lane_row[0], -1);
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, QPoint(20, header));
    QVERIFY(!view->rankCollapsed(0));
    QVERIFY(view->layout().lane_row[0] >= 0);
  }
};

DDPSCOPE_TEST_MAIN(TestTimelineView)
#include "tst_timeline_view.moc"
