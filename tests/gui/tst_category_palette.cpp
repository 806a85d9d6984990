// Colours that mark categories side by side stay apart in colour-blind vision. Each
// palette is rendered through a simulation of deuteranopia (the commonest deficiency, red
// and green folded together) and every pair must stay kMinDistance apart in CIELAB:
// the rank palette, the timeline's span kinds as one run shows them together, and the
// colours the real widgets drew (the Live tab's ranks, the Overlap chart, the timeline's
// legend). The simulation is Machado, Oliveira and Fernandes (2009), severity 1.
#include <QtTest/QtTest>

#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLabel>
#include <QLineSeries>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QAbstractBarSeries>
#include <array>
#include <cmath>

#include "category_palette.h"
#include "gui_test_runs.h"
#include "kind_colors.h"
#include "live_monitor.h"
#include "main_window.h"
#include "overlap_page.h"
#include "timeline_page.h"
#include "test_registry.h"

using namespace ddpscope::gui;
using ddpscope::probes::Kind;

namespace {

// Below about 10 (CIE76), two small patches side by side read as one colour.
constexpr double kMinDistance = 10.0;

double toLinear(double c) { return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4); }

std::array<double, 3> linearRgb(const QColor& c) {
  return {toLinear(c.redF()), toLinear(c.greenF()), toLinear(c.blueF())};
}

// What a deuteranope sees, in linear RGB.
std::array<double, 3> deuteranopia(const QColor& c) {
  static constexpr double m[3][3] = {
      {0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}};
  const auto rgb = linearRgb(c);
  std::array<double, 3> out{};
  for (int i = 0; i < 3; ++i)
    out[i] = std::clamp(m[i][0] * rgb[0] + m[i][1] * rgb[1] + m[i][2] * rgb[2], 0.0, 1.0);
  return out;
}

// CIELAB (D65) of a linear RGB colour.
std::array<double, 3> lab(const std::array<double, 3>& rgb) {
  const double x = (0.4124 * rgb[0] + 0.3576 * rgb[1] + 0.1805 * rgb[2]) / 0.95047;
  const double y = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
  const double z = (0.0193 * rgb[0] + 0.1192 * rgb[1] + 0.9505 * rgb[2]) / 1.08883;
  const auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116; };
  return {116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
}

double seenApart(const QColor& a, const QColor& b) {
  const auto p = lab(deuteranopia(a)), q = lab(deuteranopia(b));
  return std::hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

struct Named {
  QString name;
  QColor color;
};

// Every pair of `colors` stays apart; the closest pair is named when one does not.
void checkApart(const QString& palette, const std::vector<Named>& colors) {
  QVERIFY2(colors.size() >= 2, qPrintable(palette + ": fewer than two colours to compare"));
  for (size_t i = 0; i < colors.size(); ++i)
    for (size_t j = i + 1; j < colors.size(); ++j) {
      const double d = seenApart(colors[i].color, colors[j].color);
      QVERIFY2(d >= kMinDistance, qPrintable(QString("%1: %2 (%3) and %4 (%5) are %6 apart in deuteranopia, under %7")
                                                 .arg(palette, colors[i].name, colors[i].color.name(), colors[j].name,
                                                      colors[j].color.name())
                                                 .arg(d, 0, 'f', 1)
                                                 .arg(kMinDistance)));
    }
}

std::vector<Named> kinds(std::initializer_list<Kind> list) {
  std::vector<Named> out;
  for (Kind k : list)
    out.push_back({kindLabel(k), kindColor(k)});
  out.push_back({"exposed communication", QColor(0xd6, 0x27, 0x28)});  // the line under the spans
  return out;
}

}  // namespace

class TestCategoryPalette : public QObject {
  Q_OBJECT

  QTemporaryDir m_config;

 private slots:
  void initTestCase() { qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8()); }

  // The check can fail: the colours it replaced fold together.
  void testTheSimulationFoldsRedAndGreen() {
    QVERIFY(seenApart(QColor(0x59, 0xa1, 0x4f), QColor(0xe1, 0x57, 0x59)) < kMinDistance);  // old allreduce, finalize
    QVERIFY(seenApart(QColor::fromHsv(0, 60, 245), QColor::fromHsv(137, 60, 245)) < kMinDistance);  // old ZeRO 0, 1
    QVERIFY(seenApart(Qt::blue, QColor(0xe6, 0x9f, 0x00)) > 50);
  }

  void testRankColoursStayApart() {
    std::vector<Named> ranks;
    for (int r = 0; r < kDistinctRankColors; ++r)
      ranks.push_back({QString("rank %1").arg(r), rankColor(r)});
    checkApart("rank palette", ranks);
    QCOMPARE(rankColor(kDistinctRankColors), rankColor(0));
  }

  void testSpanKindsOfOneRunStayApart() {
    checkApart("a DDP run's spans",
               kinds({Kind::Iteration, Kind::Forward, Kind::Backward, Kind::Optimizer, Kind::AutogradNode,
                      Kind::BucketCopy, Kind::Allreduce, Kind::CommHook, Kind::Finalize, Kind::PgOp}));
    checkApart("a GPU run's spans",
               kinds({Kind::Iteration, Kind::Forward, Kind::Backward, Kind::Optimizer, Kind::Allreduce, Kind::PgOp,
                      Kind::GpuKernel, Kind::GpuComm, Kind::GpuMemcpy, Kind::GpuMemset, Kind::CudaRuntime}));
    checkApart("a distributed-autograd run's spans", kinds({Kind::Forward, Kind::Backward, Kind::RpcRecv, Kind::RpcCall,
                                                            Kind::DistBackward, Kind::AutogradNode}));
  }

  // What the widgets drew for a 7-rank run: the Live tab's per-rank lines, the Overlap
  // chart's bars and the timeline's legend.
  void testTheChartsAsDrawnStayApart() {
    QTemporaryDir folder;
    const QString file = folder.filePath("seven.ddprun");
    testing::write_test_run(file.toStdString(), kDistinctRankColors, 6);
    MainWindow window(folder.path());
    window.resize(1280, 800);
    QVERIFY(window.openRun(file));

    for (QChartView* view : window.part<LiveMonitor>()->findChildren<QChartView*>()) {
      std::vector<Named> lines;
      for (QAbstractSeries* s : view->chart()->series())
        if (auto* line = qobject_cast<QLineSeries*>(s)) lines.push_back({line->name(), line->color()});
      if (lines.size() >= 2) checkApart("Live: " + view->chart()->title(), lines);
    }

    window.showTab("Overlap");
    std::vector<Named> bars;
    for (QAbstractSeries* s : window.part<OverlapPage>()->chartView()->chart()->series())
      if (auto* series = qobject_cast<QAbstractBarSeries*>(s))
        for (QBarSet* set : series->barSets())
          if (set->count() > 0 || set->label().contains("straggler")) bars.push_back({set->label(), set->color()});
    checkApart("Overlap chart", bars);

    window.showTab("Timeline");
    std::vector<Named> legend;
    const QString html = window.part<TimelinePage>()->legend()->text();
    const QRegularExpression item("color:(#[0-9a-fA-F]{6})'>■</span>&nbsp;([^<&]+)");
    for (auto m = item.globalMatch(html); m.hasNext();) {
      const auto match = m.next();
      legend.push_back({match.captured(2).trimmed(), QColor(match.captured(1))});
    }
    checkApart("timeline legend", legend);
  }
};

DDPSCOPE_TEST_MAIN(TestCategoryPalette)
#include "tst_category_palette.moc"
