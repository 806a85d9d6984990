// The Ranks tab at a thousand ranks: 1,024 ranks x 200 iterations (rank 517 slow), the
// overview built from the breakdown rows, then frames of the heat map at 1600 x 900:
// a repaint (what hover and scrolling cost) and a resize (the map rebuilt at the new
// size), against the plain way of painting it (a rectangle per cell) in the same run.
// Prints one JSON object; frame targets: p95 <= 16 ms.
//
//   QT_QPA_PLATFORM=offscreen build/tests/bench/bench_rank_overview [ranks] [iterations] [frames]
#include <QApplication>
#include <QPainter>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>

#include "frame_bench.h"
#include "rank_overview.h"
#include "rank_overview_view.h"

using namespace ddpscope;
using bench::Clock;
using bench::ms_since;

namespace {

// The plain way: one rectangle per cell, coloured from the same scale.
class NaiveHeatmap : public QWidget {
 public:
  explicit NaiveHeatmap(const gui::RankOverview& o) : m_o(o) {}

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    const double w = static_cast<double>(width()) / static_cast<double>(m_o.iterations.size());
    const double h = static_cast<double>(height()) / static_cast<double>(m_o.rows.size());
    for (size_t r = 0; r < m_o.rows.size(); ++r)
      for (size_t c = 0; c < m_o.iterations.size(); ++c)
        p.fillRect(QRectF(static_cast<double>(c) * w, static_cast<double>(r) * h, w, h),
                   gui::RankOverviewView::colorOf(m_o.at(r, c), m_o.low_ms, m_o.high_ms));
  }

 private:
  const gui::RankOverview& m_o;
};

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const int ranks = argc > 1 ? std::atoi(argv[1]) : 1024;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 200;
  const int frames = argc > 3 ? std::atoi(argv[3]) : 50;
  std::vector<probes::TimeBreakdown> rows;
  std::vector<probes::RankRow> info;
  std::mt19937 rng(3);
  std::normal_distribution<double> noise(0, 0.3);
  for (int r = 0; r < ranks; ++r) {
    info.push_back({r, "node-" + std::to_string(r / 8)});
    for (int i = 1; i <= iterations; ++i) {
      probes::TimeBreakdown b;
      b.rank = r;
      b.iteration = i;
      b.iteration_ms = 10 + noise(rng) + (r == 517 ? 4 : 0);
      rows.push_back(b);
    }
  }
  const auto t_build = Clock::now();
  gui::RankOverview o =
      gui::makeRankOverview(rows, info, gui::OverviewMetric::Iteration, gui::OverviewOrder::SlowestFirst);
  const double build_ms = ms_since(t_build);

  gui::RankOverviewView view;
  view.resize(1600, 900);
  view.show();
  view.setOverview(o);
  QImage frame(view.size(), QImage::Format_ARGB32_Premultiplied);
  std::vector<double> repaint, resize, plain;
  for (int f = 0; f < frames; ++f) {
    auto t = Clock::now();
    view.render(&frame);
    repaint.push_back(ms_since(t));
    t = Clock::now();
    view.resize(1600 - (f % 2) * 40, 900);  // the map is rebuilt for the new size
    view.render(&frame);
    resize.push_back(ms_since(t));
  }
  NaiveHeatmap naive(view.overview());
  naive.resize(1600 - 150, 900 - 64);
  QImage naiveFrame(naive.size(), QImage::Format_ARGB32_Premultiplied);
  for (int f = 0; f < std::min(frames, 10); ++f) {
    const auto t = Clock::now();
    naive.render(&naiveFrame);
    plain.push_back(ms_since(t));
  }
  const bench::FrameStats rp = bench::stats(repaint), rs = bench::stats(resize), pl = bench::stats(plain);
  nlohmann::ordered_json out = {{"ranks", ranks},
                                {"iterations", iterations},
                                {"overview_build_ms", build_ms},
                                {"repaint_ms_median", rp.median},
                                {"repaint_ms_p95", rp.p95},
                                {"resize_ms_median", rs.median},
                                {"resize_ms_p95", rs.p95},
                                {"baseline_rect_per_cell_ms_median", pl.median},
                                {"ratio_resize_over_baseline", rs.median / pl.median},
                                {"target_frame_ms_p95", 16}};
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
