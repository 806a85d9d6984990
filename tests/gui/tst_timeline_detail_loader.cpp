// The timeline of a big run loads the detail (autograd nodes, gradient ticks) of the
// window shown, in the background; a file gone before the next window's detail leaves the
// structure shown and says so. "Big" is DDPSCOPE_DETAIL_AT_OPEN spans here (10,000).
#include <QtTest/QtTest>

#include "big_run_fixture.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;
using probes::Kind;
using namespace ddpscope::gui::big_run_fixture;

class TestTimelineDetailLoader : public BigRunTest {
  Q_OBJECT

 private slots:

  void initTestCase() {
    qputenv("DDPSCOPE_DETAIL_AT_OPEN", "10000");
    m_file = path("big.ddprun");
    probes::RunStoreWriter w(m_file);
    w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
    for (int rank = 0; rank < 2; ++rank)
      bench::write_iterations(w, rank, 1, kIterations);
    w.end_run("finished");
  }

  void testTheTimelineLoadsTheDetailOfTheWindowShown() {
    MainWindow window{QString()};
    window.resize(1280, 800);
    window.show();
    window.showTab(QStringLiteral("timeline"));
    TimelineDetailLoader* loader = window.findChild<TimelinePage*>()->detailLoader();
    QSignalSpy loaded(loader, &TimelineDetailLoader::loaded);
    QVERIFY(window.openRun(QString::fromStdString(m_file)));
    TimelineView* view = window.part<TimelinePage>()->view();
    QVERIFY(!window.currentRun()->timeline.has_detail);
    // It opens on iteration 2: that window (and one as wide each side) fits the budget.
    QVERIFY(loaded.wait(10000));
    QVERIFY(view->data().has_detail);
    const int64_t shownBegin = view->axis().begin_ns, shownEnd = view->axis().end_ns;
    QVERIFY(count_kind(view->data(), Kind::AutogradNode, shownBegin, shownEnd) > 0);
    QCOMPARE(count_kind(view->data(), Kind::AutogradNode, iteration_begin(30), iteration_begin(50)), int64_t{0});
    QLabel* note = window.findChild<TimelinePage*>()->detailNote();
    QVERIFY2(note->isVisible() && note->text().startsWith(QStringLiteral("Detail shown for")),
             qPrintable(note->text()));
    // Elsewhere, with a budget below a pack: the page says to zoom in, and loads nothing.
    loader->setWindowSpans(100);
    view->showWindow(iteration_begin(40), iteration_begin(41));
    QTRY_VERIFY_WITH_TIMEOUT(note->text().contains(QStringLiteral("Zoom in")), 5000);
    QVERIFY(!loader->isLoading());
    QCOMPARE(count_kind(view->data(), Kind::AutogradNode, iteration_begin(40), iteration_begin(41)), int64_t{0});
    // With the budget back, the same window loads.
    loader->setWindowSpans(TimelineDetailLoader::kWindowSpans);
    view->showWindow(iteration_begin(40), iteration_begin(41) + 1);
    QVERIFY(loaded.wait(10000));
    QCOMPARE(count_kind(view->data(), Kind::AutogradNode, iteration_begin(40), iteration_begin(41) - 1),
             int64_t{2 * 160});
    QCOMPARE(view->axis().begin_ns, iteration_begin(40));  // the window stayed
  }

  void testAFileGoneBeforeTheNextWindowLeavesTheStructureAndSaysSo() {
    const std::string copy = path("gone.ddprun");
    std::filesystem::copy_file(m_file, copy, std::filesystem::copy_options::overwrite_existing);
    auto window = app();
    auto* page = window->findChild<TimelinePage*>();
    QSignalSpy loaded(page->detailLoader(), &TimelineDetailLoader::loaded);
    QVERIFY(window->openRun(QString::fromStdString(copy)));
    QVERIFY(loaded.wait(10000));
    std::filesystem::remove(copy);
    window->part<TimelinePage>()->view()->showWindow(iteration_begin(45), iteration_begin(46));
    QTRY_VERIFY_WITH_TIMEOUT(page->detailNote()->text().contains(QStringLiteral("could not be read")), 5000);
    QVERIFY(!window->part<TimelinePage>()->view()->data().lanes.empty());  // what was shown stays
  }
};

DDPSCOPE_TEST_MAIN(TestTimelineDetailLoader)
#include "tst_timeline_detail_loader.moc"
