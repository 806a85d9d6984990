// Searching a big run's timeline: the search runs off the UI thread, over the whole run,
// not only the detail loaded.
#include <QtTest/QtTest>

#include "big_run_fixture.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;
using probes::Kind;
using namespace ddpscope::gui::big_run_fixture;

class TestTimelineSearch : public BigRunTest {
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

  void testABigTimelineIsSearchedOffTheUiThread() {
    auto app = openInApp();
    QVERIFY(app);
    MainWindow& window = *app;
    auto* page = window.findChild<TimelinePage*>();
    page->setSearchInBackgroundAbove(0);
    page->showSearch();
    page->searchField()->setText(QStringLiteral("optimizer"));
    page->findNext();
    QVERIFY2(page->searchStatus()->text().startsWith(QStringLiteral("searching")),
             qPrintable(page->searchStatus()->text()));
    QTRY_COMPARE_WITH_TIMEOUT(page->searchResults().matches.size(), size_t{2 * kIterations}, 5000);
    QVERIFY(window.part<TimelinePage>()->view()->selection().valid());
    QVERIFY2(page->searchStatus()->text().contains(QStringLiteral("in the window loaded")),
             qPrintable(page->searchStatus()->text()));
    // The next one comes from the results at once.
    const int shown = page->currentMatch();
    page->findNext();
    QCOMPARE(page->currentMatch(), (shown + 1) % (2 * kIterations));
  }
};

DDPSCOPE_TEST_MAIN(TestTimelineSearch)
#include "tst_timeline_search.moc"
