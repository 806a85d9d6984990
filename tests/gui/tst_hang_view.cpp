// The Hang view's flight-recorder grid on real widgets (offscreen): a run imported from
// flight-recorder dumps (8 ranks, rank 5 never called collective #4) shows the verdict
// above a grid of ranks x collectives coloured by state, the missing cell empty; a click
// on a cell opens the timeline on that rank's record of the collective. The per-rank table
// says where each rank's code stood at its latest stack, or, for dumps, as its record of the
// finding's collective keeps it.
#include <QtTest/QtTest>

#include <QClipboard>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTreeWidget>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <fstream>
#include <nlohmann/json.hpp>

#include "flight_import.h"
#include "hang_view.h"
#include "source_view.h"
#include "stack_panel.h"
#include "main_window.h"
#include "timeline_page.h"
#include "classroom_controller.h"
#include "overlap_page.h"
#include "graph_page.h"
#include "buckets_page.h"
#include "timeline_view.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::gui;
using nlohmann::json;

namespace {

// Rank r's dump: collectives #1..#4 of group "0" (PyTorch numbers them from 1); rank 5
// stops after #3, the others wait in #4.
json dump_of(int rank) {
  json entries = json::array();
  const int calls = rank == 5 ? 3 : 4;
  for (int i = 0; i < calls; ++i) {
    const bool last = i == 3;
    const int64_t t = 1'000'000'000 + i * 10'000'000;
    entries.push_back({{"record_id", i},
                       {"pg_id", 0},
                       {"process_group", {"0", "default_pg"}},
                       {"collective_seq_id", i + 1},
                       {"p2p_seq_id", 0},
                       {"op_id", i + 1},
                       {"profiling_name", "nccl:all_reduce"},
                       {"input_sizes", {{256}}},
                       {"output_sizes", {{256}}},
                       {"input_dtypes", {"Float"}},
                       {"output_dtypes", {"Float"}},
                       {"state", last ? "started" : "completed"},
                       {"time_created_ns", t},
                       {"time_discovered_started_ns", t + 1000},
                       {"time_discovered_completed_ns", last ? json(nullptr) : json(t + 2'000'000)},
                       {"timeout_ms", 600000},
                       {"frames", {{{"name", "train_step"}, {"filename", "train.py"}, {"line", 7}}}}});
  }
  return {{"version", "2.4"},
          {"pg_config", {{"0", {{"name", "0"}, {"desc", "default_pg"}, {"ranks", "[0, 1, 2, 3, 4, 5, 6, 7]"}}}}},
          {"entries", entries}};
}

// Two ranks, rank 1 the culprit, each with a stack: the script's frames in `script` for rank 1,
// in a file that is not on this machine for rank 0; a second thread each.
probes::HangReport twoRanksWithStacks(const QString& script) {
  probes::HangReport report;
  report.start_ns = 1'000'000'000;
  for (int r = 0; r < 2; ++r) {
    probes::RankHangState st;
    st.rank = r;
    report.ranks.push_back(st);
  }
  report.culprits = {1};
  auto capture = [](int rank, const QString& file) {
    probes::StackCapture c;
    c.rank = rank;
    c.t_ns = 4'000'000'000;
    c.reason = "no progress for 3.0 s";
    c.threads.push_back({7,
                         "MainThread",
                         {{"wait", "/usr/lib/python3.11/threading.py", 320, "waiter.acquire()"},
                          {"load_batch", file.toStdString(), 41, "time.sleep(30)"},
                          {"main", file.toStdString(), 52, "x = load_batch()"}},
                         0});
    c.threads.push_back({8, "pin_memory", {{"run", "/usr/lib/python3.11/threading.py", 975, ""}}, 0});
    return c;
  };
  report.stacks = {capture(0, "/nowhere/train.py"), capture(1, script)};
  return report;
}

}  // namespace

class TestHangView : public QObject {
  Q_OBJECT

 private slots:
  // Each rank's code from its latest stack (a PyTorch rank's): the innermost frame of the
  // script's own code in the table, the whole stack in the cell's tooltip; "(earlier)" when the
  // rank recorded events after it; a dash for a rank without one.
  void testTheTableSaysWhereEachRanksCodeIs() {
    probes::HangReport report;
    report.start_ns = 1'000'000'000;
    for (int r = 0; r < 3; ++r) {
      probes::RankHangState st;
      st.rank = r;
      st.last_event_ns = 2'000'000'000;
      st.last_event = "optimizer 'optimizer step'";
      report.ranks.push_back(st);
    }
    auto capture = [](int rank, int64_t t_ns, const char* function, int64_t line) {
      probes::StackCapture c;
      c.rank = rank;
      c.t_ns = t_ns;
      c.reason = "no progress for 3.0 s";
      c.threads.push_back({7,
                           "MainThread",
                           {{"sleep_helper", "/usr/lib/python3.11/threading.py", 320, "waiter.acquire()"},
                            {function, "/home/u/train.py", line, "time.sleep(30)"},
                            {"main", "/home/u/train.py", 52, "x = load_batch()"}},
                           0});
      return c;
    };
    report.stacks = {capture(1, 5'000'000'000, "load_batch", 41), capture(2, 1'500'000'000, "load_batch", 41)};
    HangView view;
    view.setReport(report, "headline", false);
    QTableWidget* table = view.table();
    QCOMPARE(table->horizontalHeaderItem(HangView::Code)->text(), QString("Its code (latest stack)"));
    QCOMPARE(table->item(0, HangView::Code)->text(), QString("–"));
    QCOMPARE(table->item(1, HangView::Code)->text(),
             QString("load_batch at train.py:41 (`time.sleep(30)`), called from main at train.py:52"));
    QVERIFY(table->item(2, HangView::Code)->text().endsWith(" (earlier)"));
    const QString tip = table->item(1, HangView::Code)->toolTip();
    QVERIFY2(tip.startsWith("rank 1's stack, 4.0 s into the run (no progress for 3.0 s):") &&
                 tip.contains("sleep_helper at /usr/lib/python3.11/threading.py:320") &&
                 tip.contains("load_batch at /home/u/train.py:41  time.sleep(30)"),
             qPrintable(tip));
  }

  // Beside the table, the selected rank's stack (the culprit's first): the script's own frames
  // listed, the libraries' one tick away; a frame whose file is readable opens at its line,
  // one whose file is not here says so; Copy as text gives every frame.
  void testTheSelectedRanksStackIsShownBesideTheTable() {
    QTemporaryDir folder;
    const QString script = folder.filePath("train.py");
    {
      QFile f(script);
      QVERIFY(f.open(QIODevice::WriteOnly));
      for (int line = 1; line <= 60; ++line)
        f.write(QStringLiteral("x%1 = %1\n").arg(line).toUtf8());
    }
    probes::HangReport report = twoRanksWithStacks(script);
    HangView view;
    view.setReport(report, "headline", false);
    StackPanel* panel = view.stackPanel();
    QVERIFY(!panel->isHidden());
    QCOMPARE(panel->title(), QString("rank 1's stack, 3.0 s into the run (no progress for 3.0 s)"));
    QTreeWidget* tree = panel->tree();
    QCOMPARE(tree->topLevelItemCount(), 2);
    QTreeWidgetItem* main = tree->topLevelItem(0);
    QCOMPARE(main->text(0), QString("MainThread"));
    QVERIFY(main->isExpanded() && !tree->topLevelItem(1)->isExpanded());
    QCOMPARE(main->childCount(), 3);  // the script's two frames and the libraries' count
    QCOMPARE(main->child(0)->text(0), QString("load_batch"));
    QCOMPARE(main->child(0)->text(1), QString("train.py:41"));  // the line in view; the path in the tip
    QCOMPARE(main->child(0)->toolTip(1), script + ":41");
    QCOMPARE(main->child(2)->text(0), QString("(1 frame of libraries: tick \"Libraries' frames\")"));
    panel->librariesBox()->setChecked(true);
    main = tree->topLevelItem(0);
    QCOMPARE(main->childCount(), 3);
    QCOMPARE(main->child(0)->text(0), QString("wait"));

    // The script's frame opens at its line.
    QSignalSpy opened(panel, &StackPanel::sourceOpened);
    emit tree->itemActivated(main->child(1), 0);
    QCOMPARE(opened.size(), 1);
    QCOMPARE(opened.at(0).at(1).toInt(), 41);
    SourceView* source = panel->findChild<SourceView*>();
    QVERIFY(source);
    QCOMPARE(source->currentLine(), 41);
    QCOMPARE(source->text()->textCursor().block().text(), QString("x41 = 41"));
    delete source;

    // Copy as text: every thread and frame, as `hang --all-frames` lists them.
    panel->copyButton()->click();
    const QString copied = QApplication::clipboard()->text();
    QVERIFY2(copied.contains("thread 'pin_memory'") && copied.contains("wait at /usr/lib/python3.11/threading.py:320"),
             qPrintable(copied));

    // Rank 0's frames name a file that is not on this machine: its frame says so, opens nothing.
    view.table()->selectRow(0);
    QCOMPARE(panel->title(), QString("rank 0's stack, 3.0 s into the run (no progress for 3.0 s)"));
    QTreeWidgetItem* frame = tree->topLevelItem(0)->child(1);
    QCOMPARE(frame->text(0), QString("load_batch"));
    QVERIFY2(frame->toolTip(0).contains("is not on this machine"), qPrintable(frame->toolTip(0)));
    emit tree->itemActivated(frame, 0);
    QCOMPARE(opened.size(), 1);

    // The selection stays on rank 0 when the report comes again (a live job's reload).
    view.setReport(report, "headline", false);
    QVERIFY(panel->title().startsWith("rank 0's stack"));
    // A report without stacks: no panel.
    report.stacks.clear();
    view.setReport(report, "headline", false);
    QVERIFY(panel->isHidden());
  }

  void testGridShowsTheMismatchAndOpensTheTimeline() {
    QTemporaryDir folder;
    std::vector<std::string> dumps;
    for (int r = 0; r < 8; ++r) {
      dumps.push_back(folder.filePath(QString("nccl_trace_rank_%1").arg(r)).toStdString());
      std::ofstream(dumps.back()) << dump_of(r).dump();
    }
    const QString run = folder.filePath("hang.ddprun");
    probes::import_flight_dumps(dumps, run.toStdString());
    MainWindow window(folder.path());
    QVERIFY(window.openRun(run));
    window.showTab("hang");
    HangView* hang = window.part<HangView>();
    const QString verdict = hang->verdict() + hang->headline();
    QVERIFY2(verdict.contains("Group '0' collective #4: missing ranks. Rank 5 never called all_reduce Float[256]"),
             qPrintable(verdict));
    QTableWidget* grid = hang->grid();
    QVERIFY(!grid->isHidden());
    QCOMPARE(grid->rowCount(), 8);
    QCOMPARE(grid->columnCount(), 4);  // #1..#4: the finding and what came before
    QCOMPARE(grid->horizontalHeaderItem(3)->text(), QString("▶ #4"));
    QCOMPARE(grid->item(5, 3)->text(), QString("–"));
    QCOMPARE(grid->item(0, 3)->text(), QString("all_reduce Float[256]"));
    // Coloured by state: completed, started and not called differ.
    const QColor done = grid->item(0, 0)->background().color(), waiting = grid->item(0, 3)->background().color(),
                 none = grid->item(5, 3)->background().color();
    QVERIFY(done != waiting && waiting != none && done != none);
    QVERIFY2(grid->item(2, 3)->toolTip().contains("train.py:7"), qPrintable(grid->item(2, 3)->toolTip()));
    // The dumps do not say when they were taken: a rank waits, for no made-up "0.0 s".
    for (int row = 0; row < hang->table()->rowCount(); ++row) {
      const QString blocked = hang->table()->item(row, HangView::BlockedIn)->text();
      QVERIFY2(!blocked.contains(" for "), qPrintable(blocked));
    }
    QVERIFY2(!hang->findings().contains("since 0 ms"), qPrintable(hang->findings()));
    // Each rank's code as its record of #4 keeps it; rank 5 has no record of #4 to show.
    for (int row = 0; row < hang->table()->rowCount(); ++row) {
      const int rank = hang->table()->item(row, 0)->data(Qt::DisplayRole).toInt();
      const QTableWidgetItem* code = hang->table()->item(row, HangView::Code);
      QCOMPARE(code->text(), rank == 5 ? QString("–") : QString("train_step at train.py:7"));
      if (rank != 5)
        QVERIFY2(code->toolTip().contains(QString("rank %1's call of all_reduce #4 in group '0', as its flight record "
                                                  "keeps it")
                                              .arg(rank)),
                 qPrintable(code->toolTip()));
    }

    QSignalSpy clicked(hang, &HangView::collectiveClicked);
    emit grid->cellClicked(2, 1);
    QCOMPARE(clicked.size(), 1);
    QCOMPARE(clicked.at(0).at(0).toInt(), 2);
    QCOMPARE(window.findChild<QTabWidget*>()->tabText(window.findChild<QTabWidget*>()->currentIndex()),
             QString("Timeline"));
    // Rank 2's #2: started at 1.010000001 s, completed 2 ms later (the run's clock).
    QCOMPARE(window.part<TimelinePage>()->view()->rangeBegin(), int64_t(1'010'001'000));
    QCOMPARE(window.part<TimelinePage>()->view()->rangeEnd(), int64_t(1'012'000'000));
    // ... and its op selected: Details describe it, not "Nothing selected".
    const SpanRef op = window.part<TimelinePage>()->view()->selection();
    QVERIFY(op.valid());
    QCOMPARE(window.part<TimelinePage>()->view()->data().lanes[static_cast<size_t>(op.lane)].rank, 2);
    const QTreeWidget* details = window.part<TimelinePage>()->details();
    QVERIFY(details && details->topLevelItemCount() > 0);
    QVERIFY2(details->topLevelItem(0)->text(0) != QString("Nothing selected"),
             qPrintable(details->topLevelItem(0)->text(0)));
    // A cell with no record leads nowhere.
    emit grid->cellClicked(5, 3);
    QCOMPARE(clicked.size(), 1);
  }

  // The app given a folder of PyTorch 2.11's own pickled dumps (gloo, 4 ranks, rank 2 lost)
  // imports them and shows the verdict and the grid.
  void testTheAppOpensAFolderOfRealPickles() {
    QTemporaryDir work;
    const QString dumps = DDPSCOPE_SOURCE_DIR "/tests/probes/data/torch_2_11_flight/gloo-4-size/pickle";
    MainWindow window(work.path());
    QVERIFY(window.openPath(dumps));
    HangView* hang = window.part<HangView>();
    const QString verdict = hang->verdict() + hang->headline();
    QVERIFY2(verdict.contains("Group '0' collective #19: size mismatch. Rank 3 called all_reduce Float[2048]"),
             qPrintable(verdict));
    QCOMPARE(hang->grid()->rowCount(), 3);  // ranks 0, 1 and 3: no dump of rank 2
    // ... and the tab says so (issue 68: the grid listed three ranks without a word on the fourth).
    QVERIFY2(hang->findings().contains("no dump of rank 2: the verdict knows only what the other ranks recorded"),
             qPrintable(hang->findings()));
  }
};

DDPSCOPE_TEST_MAIN(TestHangView)
#include "tst_hang_view.moc"
