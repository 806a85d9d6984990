// The Links tab at a thousand ranks: 1,024 ranks with every ordered pair measured (a
// million links, the most a run can hold there; rank 517's links slow), the grid built
// from the report, then frames of the heat map at 1600 x 900: a repaint (hover, scrolling)
// and a resize (the map rebuilt at the new size, each pixel the worst of its cells),
// against painting a rectangle per link in the same run. Prints one JSON object; frame
// target: p95 <= 16 ms.
//
//   QT_QPA_PLATFORM=offscreen build/tests/bench/bench_link_matrix [ranks] [frames]
#include <QApplication>
#include <QPainter>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "frame_bench.h"
#include "link_grid.h"
#include "link_matrix_view.h"
#include "rank_overview_view.h"

using namespace ddpscope;
using bench::Clock;
using bench::ms_since;

namespace {

// The baseline: every link its own rectangle.
class RectPerLink : public QWidget {
 public:
  explicit RectPerLink(const gui::LinkGrid& g) : m_grid(g) {}

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    const double side = std::min(width(), height()) / static_cast<double>(m_grid.size());
    for (size_t r = 0; r < m_grid.size(); ++r)
      for (size_t c = 0; c < m_grid.size(); ++c)
        p.fillRect(QRectF(static_cast<double>(c) * side, static_cast<double>(r) * side, side, side),
                   gui::RankOverviewView::colorOf(m_grid.badness(m_grid.at(r, c)), 0, 1));
  }

 private:
  const gui::LinkGrid& m_grid;
};

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int frames = argc > 2 ? std::atoi(argv[2]) : 50;
  auto report = std::make_shared<probes::LinkReport>();
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> rate(0.2, 0.3);
  for (int a = 0; a < ranks; ++a) {
    for (int b = 0; b < ranks; ++b) {
      if (a == b) continue;
      probes::RankLink l;
      l.src = a;
      l.dst = b;
      l.src_host = "node-" + std::to_string(a / 8);
      l.dst_host = "node-" + std::to_string(b / 8);
      l.measured_gbps = a == 517 || b == 517 ? 0.025 : rate(rng);
      report->links.push_back(std::move(l));
    }
  }
  report->measured = true;
  const auto t_build = Clock::now();
  gui::LinkGrid grid = gui::makeLinkGrid(*report, gui::LinkMeasure::Measured, gui::LinkLevel::Ranks, ranks);
  const double build_ms = ms_since(t_build);

  gui::LinkMatrixView view;
  view.resize(1600, 900);
  view.show();
  view.setGrid(grid, report);
  QImage frame(view.size(), QImage::Format_ARGB32_Premultiplied);
  std::vector<double> repaint, resize, plain;
  for (int f = 0; f < frames; ++f) {
    auto t = Clock::now();
    view.render(&frame);
    repaint.push_back(ms_since(t));
    t = Clock::now();
    view.resize(1600, 900 - (f % 2) * 40);  // the map's side follows the height: rebuilt
    view.render(&frame);
    resize.push_back(ms_since(t));
  }
  RectPerLink naive(grid);
  naive.resize(800, 800);
  QImage naiveFrame(naive.size(), QImage::Format_ARGB32_Premultiplied);
  for (int f = 0; f < std::min(frames, 5); ++f) {
    const auto t = Clock::now();
    naive.render(&naiveFrame);
    plain.push_back(ms_since(t));
  }
  const bench::FrameStats rp = bench::stats(repaint), rs = bench::stats(resize), pl = bench::stats(plain);
  nlohmann::ordered_json out = {{"ranks", ranks},
                                {"links", report->links.size()},
                                {"grid_build_ms", build_ms},
                                {"repaint_ms_median", rp.median},
                                {"repaint_ms_p95", rp.p95},
                                {"resize_ms_median", rs.median},
                                {"resize_ms_p95", rs.p95},
                                {"baseline_rect_per_link_ms_median", pl.median},
                                {"ratio_resize_over_baseline", rs.median / pl.median},
                                {"target_frame_ms_p95", 16}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
