// The Timeline tab's Details panel: a span imported from a trace lists every argument the
// trace gave it and the run file's row field by field, sorts, and copies.
#include <QtTest/QtTest>

#include "timeline_fixture.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using namespace ddpscope::gui::timeline_fixture;

class TestTimelinePage : public TimelineTest {
  Q_OBJECT

 private slots:
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // A span imported from a trace: Details lists every argument the trace gave it (a
  // kernel's grid, block, stream, registers, occupancy) and the run file's row field by
  // field; the panel sorts by a header click and copies what is selected, or all.
  void testDetailsListEveryRecordedFieldAndArgument() {
    QTemporaryDir folder;
    MainWindow window(folder.path());
    QSignalSpy finished(window.part<TraceImportJob>(), &TraceImportJob::finished);
    QVERIFY(window.openPath(QStringLiteral(DDPSCOPE_TORCH_FIXTURES) + "/kineto_cuda_nccl_1"));
    QVERIFY(finished.wait(60000));
    window.showTab("Timeline");
    TimelineView* view = window.part<TimelinePage>()->view();
    SpanRef kernel;
    for (size_t l = 0; l < view->data().lanes.size() && !kernel.valid(); ++l)
      for (size_t i = 0; i < view->data().lanes[l].spans.size(); ++i)
        if (view->data().lanes[l].spans[i].kind == ddpscope::probes::Kind::GpuKernel) {
          kernel = {static_cast<int>(l), static_cast<int64_t>(i), SpanRef::In::Spans};
          break;
        }
    QVERIFY(kernel.valid());
    view->select(kernel);
    QTreeWidget* details = window.part<TimelinePage>()->details();
    QMap<QString, QString> args, recorded;
    for (int i = 0; i < details->topLevelItemCount(); ++i) {
      QTreeWidgetItem* group = details->topLevelItem(i);
      auto& into = group->text(0) == "Arguments" ? args : recorded;
      if (group->text(0) != "Arguments" && group->text(0) != "Recorded") continue;
      for (int c = 0; c < group->childCount(); ++c)
        into[group->child(c)->text(0)] = group->child(c)->text(1);
    }
    for (const char* key :
         {"grid", "block", "stream", "correlation", "registers per thread", "est. achieved occupancy %", "device"})
      QVERIFY2(args.contains(key), qPrintable(QStringList(args.keys()).join(", ")));
    QVERIFY(args["grid"].startsWith("[") && args["block"].startsWith("["));
    QCOMPARE(recorded["kind"], QString("gpu_kernel"));
    QVERIFY(recorded.contains("t_begin_ns") && recorded.contains("name"));
    // Sortable: a click on the Field header sorts; before it, reading order.
    QCOMPARE(details->topLevelItem(0)->text(0), QString("Name"));
    details->sortByColumn(0, Qt::AscendingOrder);
    QStringList top;
    for (int i = 0; i < details->topLevelItemCount(); ++i)
      top << details->topLevelItem(i)->text(0);
    QStringList sorted = top;
    std::sort(sorted.begin(), sorted.end(), [](const QString& a, const QString& b) { return a < b; });
    QCOMPARE(top, sorted);
    // Copyable: all rows when none is selected, else the selected ones.
    details->clearSelection();
    window.part<TimelinePage>()->copyDetails();
    const QString all = QGuiApplication::clipboard()->text();
    QVERIFY2(all.contains("grid\t[") && all.contains("Kind\t"), qPrintable(all.left(400)));
    details->clearSelection();
    details->topLevelItem(0)->setSelected(true);
    window.part<TimelinePage>()->copyDetails();
    QCOMPARE(QGuiApplication::clipboard()->text().count('\n'), 0);
  }

  // Issue 68: a range over a span with a very long name (a GPU kernel's): at a laptop's
  // sizes the Name column leaves Spans, Time in range and Longest in view; the name is
  // elided, whole in its tooltip.
  void testRangeNamesLeaveTheTimesInView_data() {
    QTest::addColumn<QSize>("size");
    QTest::newRow("1024x700") << QSize(1024, 700);
    QTest::newRow("1280x800") << QSize(1280, 800);
  }

  void testRangeNamesLeaveTheTimesInView() {
    using namespace ddpscope::probes;
    QFETCH(QSize, size);
    QTemporaryDir folder;
    const QString file = folder.filePath("long.ddprun");
    QString name = QStringLiteral("void at::native::elementwise_kernel<128, 4>");
    while (name.size() < 300)
      name += QStringLiteral("::gpu_kernel_impl<at::native::BinaryFunctor<float, float, float>>");
    {
      RunStoreWriter w(file.toStdString());
      w.begin_run({R"({"model":"mlp"})", 1, "mpi", "mlp"});
      ddpscope::gui::testing::write_iterations(w, 0, 1, 3);
      EventBatch b;
      b.rank = 0;
      b.threads = {{0, 100, "compute"}};
      b.names = {name.toStdString()};
      b.events.push_back(
          BatchEvent{1050, 1150, -1, -1, -1, 2, -1, 0, -1, -1, 0, static_cast<uint8_t>(Kind::Forward), 0});
      w.write(b);
      w.end_run("finished");
    }
    MainWindow window(folder.path());
    window.resize(size);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.openRun(file));
    window.showTab("Timeline");
    TimelinePage* page = window.part<TimelinePage>();
    page->view()->setRange(1000, 2000);
    QApplication::processEvents();
    QApplication::processEvents();
    QTableView* table = page->rangeTable();
    QVERIFY(table->isVisible());
    QVERIFY(table->model()->rowCount() >= 2);
    for (int column = 0; column < table->model()->columnCount(); ++column) {
      const int right = table->columnViewportPosition(column) + table->columnWidth(column);
      QVERIFY2(table->columnViewportPosition(column) >= 0 && right <= table->viewport()->width(),
               qPrintable(QStringLiteral("column \"%1\" at %2..%3 of %4")
                              .arg(table->model()->headerData(column, Qt::Horizontal).toString())
                              .arg(table->columnViewportPosition(column))
                              .arg(right)
                              .arg(table->viewport()->width())));
    }
    bool found = false;
    for (int row = 0; row < table->model()->rowCount(); ++row) {
      const QModelIndex cell = table->model()->index(row, 0);
      if (cell.data().toString() != name) continue;
      found = true;
      QCOMPARE(cell.data(Qt::ToolTipRole).toString(), name);
      QVERIFY(table->columnWidth(0) < table->fontMetrics().horizontalAdvance(name));  // elided
    }
    QVERIFY(found);
  }
};

DDPSCOPE_TEST_MAIN(TestTimelinePage)
#include "tst_timeline_page.moc"
