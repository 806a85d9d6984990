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
};

DDPSCOPE_TEST_MAIN(TestTimelinePage)
#include "tst_timeline_page.moc"
