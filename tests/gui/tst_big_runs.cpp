// A big run opens with its structure (iterations, phases, communication) and the timeline
// loads the detail (autograd nodes, gradient ticks) of the window shown, in the
// background. "Big" is DDPSCOPE_DETAIL_AT_OPEN spans here (10,000), so a small synthetic
// run (2 ranks x 60 iterations of 260 spans) takes the big run's path.
#include <QtTest/QtTest>

#include "big_run_fixture.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;
using probes::Kind;
using namespace ddpscope::gui::big_run_fixture;

class TestBigRuns : public BigRunTest {
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

  void testTheStructureOpensAloneWithTheAnalysisWhole() {
    const RunData run = loadRun(m_file);
    QVERIFY(!run.timeline.has_detail);
    QVERIFY(!run.packs.empty());
    for (const auto& l : run.timeline.lanes) {
      for (const auto& s : l.spans)
        QVERIFY2(!is_detail(s.kind), qPrintable(QString::number(static_cast<int>(s.kind))));
      QVERIFY(l.instants.empty());  // the gradient ticks are detail
    }
    QCOMPARE(count_kind(run.timeline, Kind::Iteration), int64_t{2 * kIterations});
    QCOMPARE(count_kind(run.timeline, Kind::Allreduce), int64_t{2 * kIterations * 8});
    QCOMPARE(run.analysis.iterations.size(), size_t{2 * kIterations});  // the analysis reads the structure whole
    QCOMPARE(run.span_count, int64_t{2 * kIterations * bench::kSpansPerRankIteration});
  }

  void testTheDetailOfAWindowJoinsTheStructureAsAFullLoadDrawsIt() {
    const RunData run = loadRun(m_file);
    probes::RunStoreReader reader(m_file);
    const probes::TimeWindow window{iteration_begin(10), iteration_begin(12) + 9'500'000};
    const TimelineData d = withDetail(run.timeline, reader, window);
    QVERIFY(d.has_detail);
    QCOMPARE(d.detail_window, window);
    // Iterations 10, 11 and 12 of both ranks, and nothing of the others.
    QCOMPARE(count_kind(d, Kind::AutogradNode), int64_t{2 * 3 * 160});
    QCOMPARE(count_kind(d, Kind::GradReady), int64_t{2 * 3 * 80});
    QCOMPARE(count_kind(d, Kind::Iteration), int64_t{2 * kIterations});
    // Inside the window, the lanes read as a run loaded whole: the same spans in the same rows.
    const TimelineData full = loadTimeline(reader);
    QCOMPARE(d.lanes.size(), full.lanes.size());
    for (size_t i = 0; i < d.lanes.size(); ++i) {
      auto inside = [&](const TimelineLane& l) {
        std::vector<std::tuple<int64_t, int64_t, int, int>> out;
        for (const auto& s : l.spans) {
          if (s.begin_ns >= window.begin_ns && s.end_ns <= window.end_ns)
            out.emplace_back(s.begin_ns, s.end_ns, static_cast<int>(s.kind), s.row);
        }
        return out;
      };
      QCOMPARE(inside(d.lanes[i]), inside(full.lanes[i]));
      QCOMPARE(d.lanes[i].label, full.lanes[i].label);
    }
  }

  void testALaneOfDetailAloneKeepsTheFlowsOnTheirLanes() {
    // Each rank's allreduces on its comm thread (structure: collective links rank to rank)
    // and, on rank 0 only, a thread of autograd nodes alone (detail): with the detail that
    // lane comes in before rank 1's, whose lanes move down one.
    const std::string file = path("new-lane.ddprun");
    {
      probes::RunStoreWriter w(file);
      w.begin_run({R"({"model":"mlp"})", 2, "mpi", "mlp"});
      for (int rank = 0; rank < 2; ++rank) {
        probes::EventBatch b;
        b.rank = rank;
        b.threads = {{0, 1, "compute"}, {1, 2, "comm"}, {2, 3, "autograd"}};
        b.names = {"iteration", "allreduce", "LinearBackward"};
        for (int it = 1; it <= 20; ++it) {
          const int64_t o = iteration_begin(it) + rank * 1000;
          b.events.push_back({o, o + 9'000'000, -1, -1, -1, it, -1, 0, -1, -1, 0, uint8_t(Kind::Iteration), 0});
          b.events.push_back({o + 100, o + 500'000, 4096, it, -1, it, -1, 1, 0, -1, 1, uint8_t(Kind::Allreduce), 0});
          if (rank == 0)
            b.events.push_back({o + 10, o + 90, -1, -1, -1, it, -1, 2, -1, -1, 2, uint8_t(Kind::AutogradNode), 0});
        }
        w.write(b);
      }
      w.end_run("finished");
    }
    probes::RunStoreReader reader(file);
    const TimelineData structure = loadTimelineStructure(reader);
    QCOMPARE(structure.lanes.size(), size_t{4});
    QCOMPARE(structure.flows.size(), size_t{20});
    const TimelineData d = withDetail(structure, reader, {});
    QCOMPARE(d.lanes.size(), size_t{5});
    QCOMPARE(d.flows.size(), size_t{20});
    for (const TimelineFlow& f : d.flows) {
      QCOMPARE(d.lanes[f.from_lane].rank, 0);
      QCOMPARE(d.lanes[f.to_lane].rank, 1);
      QCOMPARE(d.lanes[f.to_lane].thread_name, std::string("comm"));
    }
    // The structure's flows were not touched (shared until then, copied for the change).
    QCOMPARE(structure.lanes[structure.flows[0].to_lane].thread_name, std::string("comm"));
  }

  void testTheRangePanelNamesAndSelectsEachRowsLongestSpan() {
    auto app = openInApp();
    QVERIFY(app);
    auto* page = app->findChild<TimelinePage*>();
    TimelineView* view = app->part<TimelinePage>()->view();
    view->setRange(iteration_begin(20), iteration_begin(30));
    QStandardItemModel* model = page->rangeModel();
    QVERIFY(model->rowCount() > 0);
    int iterationRow = -1;
    for (int r = 0; r < model->rowCount(); ++r) {
      if (model->item(r, 0)->text() == QStringLiteral("iteration")) iterationRow = r;
    }
    QVERIFY(iterationRow >= 0);
    QCOMPARE(model->item(iterationRow, 5)->text(), QStringLiteral("9.50 ms"));  // each is 9.5 ms long
    auto* proxy = qobject_cast<QSortFilterProxyModel*>(page->rangeTable()->model());
    emit page->rangeTable()->activated(proxy->mapFromSource(model->index(iterationRow, 3)));
    const TimelineSpan* selected = view->data().resolve(view->selection());
    QVERIFY(selected);
    QCOMPARE(selected->kind, Kind::Iteration);
    QCOMPARE(selected->end_ns - selected->begin_ns, int64_t{9'500'000});
  }

  void testASmallRunOpensWhole() {
    qputenv("DDPSCOPE_DETAIL_AT_OPEN", "100000");
    const RunData run = loadRun(m_file);
    qputenv("DDPSCOPE_DETAIL_AT_OPEN", "10000");
    QVERIFY(run.timeline.has_detail);
    QVERIFY(run.packs.empty());
    QCOMPARE(count_kind(run.timeline, Kind::AutogradNode), int64_t{2 * kIterations * 160});
  }
};

DDPSCOPE_TEST_MAIN(TestBigRuns)
#include "tst_big_runs.moc"
