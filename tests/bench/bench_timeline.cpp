// Timeline with 1M spans: how long opening a run takes until the timeline's first paint
// (target <= 1 s), the frame time while zooming and panning (median target <= 16 ms),
// and the app's memory with that run open. The baseline, in the same run: the plain way
// of painting a timeline (every span of the window drawn as a rectangle, found by a walk
// over the lane, no per-pixel merging). Prints one JSON object.
//
//   QT_QPA_PLATFORM=offscreen build/tests/bench/bench_timeline [spans] [frames] [--keep]
#include <QApplication>
#include <QPainter>
#include <QTabWidget>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "frame_bench.h"
#include "main_window.h"
#include "run_store_writer.h"
#include "synthetic_run.h"
#include "timeline_view.h"

using namespace ddpscope;
using bench::Clock;
using bench::ms_since;

namespace {

int64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      int64_t kib = 0;
      status >> kib;
      return kib;
    }
  }
  return 0;
}

// 2 ranks of the synthetic DDP run, about `target_spans` spans in all.
int64_t write_run(const std::string& path, int64_t target_spans) {
  std::filesystem::remove(path);
  probes::RunStoreWriter w(path);
  w.begin_run({R"({"model":"mlp","iters":0})", 2, "mpi", "mlp"});
  const int iterations = static_cast<int>(target_spans / (2 * bench::kSpansPerRankIteration));
  int64_t written = 0;
  for (int rank = 0; rank < 2; ++rank)
    written += bench::write_iterations(w, rank, 1, iterations);
  w.end_run("finished");
  return written;
}

// The plain way: every span of the window drawn, found by walking the lane.
class NaiveTimeline : public QWidget {
 public:
  explicit NaiveTimeline(std::shared_ptr<const gui::TimelineData> data) : m_data(std::move(data)) {}
  gui::TimeAxis axis;

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    for (size_t l = 0; l < m_data->lanes.size(); ++l) {
      const int y = 22 + static_cast<int>(l) * 26;
      for (const auto& s : m_data->lanes[l].spans) {
        if (s.end_ns < axis.begin_ns || s.begin_ns > axis.end_ns) continue;
        const double a = axis.to_px(s.begin_ns), b = axis.to_px(s.end_ns);
        p.fillRect(QRectF(170 + a, y + 2, std::max(1.0, b - a), 22),
                   QColor::fromHsv((static_cast<int>(s.kind) * 37) % 360, 120, 220));
      }
      for (const auto& s : m_data->lanes[l].instants) {
        if (s.begin_ns < axis.begin_ns || s.begin_ns > axis.end_ns) continue;
        const int x = 170 + static_cast<int>(axis.to_px(s.begin_ns));
        p.drawLine(x, y + 18, x, y + 24);
      }
    }
  }

 private:
  std::shared_ptr<const gui::TimelineData> m_data;
};

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const int64_t target = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const int frames = argc > 2 ? std::atoi(argv[2]) : 200;
  const std::string path = (std::filesystem::temp_directory_path() / "ddpscope-bench-timeline.ddprun").string();
  const auto tw = Clock::now();
  const int64_t spans = write_run(path, target);
  std::fprintf(stderr, "wrote %lld spans in %.0f ms\n", static_cast<long long>(spans), ms_since(tw));

  const int64_t rss_before = rss_kib();
  gui::MainWindow window(QString{});
  window.resize(1600, 900);
  window.show();
  window.showTab(QStringLiteral("Timeline"));
  QCoreApplication::processEvents();
  const int64_t rss_window = rss_kib();
  // Open to first paint: load the run, fill the views, paint the timeline.
  const auto t_open = Clock::now();
  if (!window.openRun(QString::fromStdString(path))) return 1;
  window.timeline()->repaint();
  const double open_ms = ms_since(t_open);
  const int64_t rss_open = rss_kib();
  window.timeline()->fitAll();

  gui::TimelineView* view = window.timeline();
  // Frames are painted into an image of the view's size: the painting itself, without
  // the platform's flush (offscreen here, a compositor on a desktop).
  QImage frame(view->size(), QImage::Format_ARGB32_Premultiplied);
  // The first frame (the whole run) also fills the glyph caches: reported on its own.
  auto t_first = Clock::now();
  view->render(&frame);
  const double first_frame_ms = ms_since(t_first);
  const std::vector<double> ours =
      bench::replay(view, bench::gestures(frames), gui::TimelineView::kLabelWidth + 700, frame);

  // The baseline over the same windows.
  // Non-owning: the window keeps the run alive.
  const std::shared_ptr<const gui::TimelineData> shared(std::shared_ptr<void>{}, &window.currentRun()->timeline);
  NaiveTimeline naive(shared);
  naive.resize(view->size());
  naive.show();
  naive.axis.width_px = view->width() - gui::TimelineView::kLabelWidth;
  naive.axis.fit(shared->begin_ns, shared->end_ns);
  naive.render(&frame);  // the same warm-up
  const std::vector<double> plain = bench::replay_on_axis(naive, naive.axis, bench::gestures(frames), 700, frame);
  const bench::FrameStats o = bench::stats(ours), b = bench::stats(plain);
  nlohmann::ordered_json out = {
      {"spans", spans},
      {"open_to_first_paint_ms", open_ms},
      {"frames", frames},
      {"first_frame_ms", first_frame_ms},
      {"frame_ms_median", o.median},
      {"frame_ms_p95", o.p95},
      {"frame_ms_max", o.max},
      {"baseline_frame_ms_median", b.median},
      {"baseline_frame_ms_p95", b.p95},
      {"median_ratio_ours_over_baseline", o.median / b.median},
      {"rss_window_mib", (rss_window - rss_before) / 1024.0},
      {"rss_run_open_mib", (rss_open - rss_window) / 1024.0},
      {"bytes_per_span_in_memory", (rss_open - rss_window) * 1024.0 / static_cast<double>(spans)},
      {"run_file_mib", static_cast<double>(std::filesystem::file_size(path)) / (1 << 20)},
      {"run_file_bytes_per_span", static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(spans)}};
  std::printf("%s\n", out.dump(2).c_str());
  if (argc > 3 && std::string(argv[3]) == "--keep") {
    std::fprintf(stderr, "kept %s\n", path.c_str());
  } else {
    std::filesystem::remove(path);
  }
  return 0;
}
