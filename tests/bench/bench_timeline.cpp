// Timeline with 1M spans (or 10M, 100M): how long opening a run takes until the
// timeline's first paint (target <= 2 s at 100M), the frame time while zooming and panning
// (p95 target <= 16 ms), and the app's memory with that run open (<= 1.5 GiB). A run of
// more than 3M spans opens with its structure and then loads the detail of the window
// shown in the background: the time until that detail is shown and the memory then are
// reported too. The baseline, in the same run: the plain way of painting a timeline
// (every span of the window drawn as a rectangle, found by a walk over the lane, no
// per-pixel merging). Prints one JSON object.
//
//   QT_QPA_PLATFORM=offscreen build/tests/bench/bench_timeline [spans] [frames] [--keep] [--ranks N]
//   (spans 100000000 --ranks 64: the issue's 64 ranks x ~6000 iterations)
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
#include "timeline_detail_loader.h"
#include "timeline_page.h"
#include "timeline_search.h"
#include "timeline_view.h"

using namespace ddpscope;
using bench::Clock;
using bench::ms_since;

namespace {

// A /proc/self/status figure in KiB: VmRSS (now) or VmHWM (the peak).
int64_t status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == field) {
      int64_t kib = 0;
      status >> kib;
      return kib;
    }
  }
  return 0;
}
int64_t rss_kib() { return status_kib("VmRSS:"); }

// `ranks` ranks of the synthetic DDP run, about `target_spans` spans in all.
int64_t write_run(const std::string& path, int64_t target_spans, int ranks) {
  std::filesystem::remove(path);
  probes::RunStoreWriter w(path);
  w.begin_run({R"({"model":"mlp","iters":0})", ranks, "mpi", "mlp"});
  const int iterations = static_cast<int>(target_spans / (int64_t{ranks} * bench::kSpansPerRankIteration));
  int64_t written = 0;
  for (int rank = 0; rank < ranks; ++rank)
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
  void paintEvent(QPaintEvent* event) override {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    for (size_t l = 0; l < m_data->lanes.size(); ++l) {
      const int y = 22 + static_cast<int>(l) * 26;
      if (y > event->rect().bottom() || y + 26 < event->rect().top()) continue;  // not on screen
      for (const auto& s : m_data->lanes[l].spans) {
        if (s.end_ns < axis.begin_ns || s.begin_ns > axis.end_ns) continue;
        const double a = axis.toPx(s.begin_ns), b = axis.toPx(s.end_ns);
        p.fillRect(QRectF(170 + a, y + 2, std::max(1.0, b - a), 22),
                   QColor::fromHsv((static_cast<int>(s.kind) * 37) % 360, 120, 220));
      }
      for (const auto& s : m_data->lanes[l].instants) {
        if (s.begin_ns < axis.begin_ns || s.begin_ns > axis.end_ns) continue;
        const int x = 170 + static_cast<int>(axis.toPx(s.begin_ns));
        p.drawLine(x, y + 18, x, y + 24);
      }
    }
  }

 private:
  std::shared_ptr<const gui::TimelineData> m_data;
};

// The command line: [spans] [frames] [--keep] [--ranks N].
struct BenchArgs {
  int64_t target = 1'000'000;
  int frames = 200;
  bool keep = false;
  int ranks = 2;
};

BenchArgs parse_args(int argc, char** argv) {
  BenchArgs a;
  a.target = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  a.frames = argc > 2 ? std::atoi(argv[2]) : 200;
  for (int i = 3; i < argc; ++i) {
    if (std::string(argv[i]) == "--keep") a.keep = true;
    if (std::string(argv[i]) == "--ranks" && i + 1 < argc) a.ranks = std::max(1, std::atoi(argv[++i]));
  }
  return a;
}

// Opening the run in the window: the times and the process's memory (KiB) after each stage.
struct OpenStats {
  double open_ms = 0;
  int64_t rss_open = 0, peak_open = 0;
  bool structure_first = false;
  double detail_ms = 0;
  int64_t rss_detail = 0, peak_detail = 0;
};

// Opens `path` in `window` and waits for the detail of a big run; false when it fails to open.
bool open_run(gui::MainWindow& window, const std::string& path, OpenStats& s) {
  // Open to first paint: load the run, fill the views, paint the timeline.
  const auto t_open = Clock::now();
  if (!window.openRun(QString::fromStdString(path))) return false;
  window.part<gui::TimelinePage>()->view()->repaint();
  s.open_ms = ms_since(t_open);
  s.rss_open = rss_kib();
  s.peak_open = status_kib("VmHWM:");
  // A big run: the detail of the window shown arrives in the background.
  s.structure_first = !window.currentRun()->timeline.has_detail;
  if (s.structure_first) {
    gui::TimelineDetailLoader* loader = window.findChild<gui::TimelinePage*>()->detailLoader();
    while (!window.part<gui::TimelinePage>()->view()->data().has_detail && ms_since(t_open) < 120'000)
      QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
    s.detail_ms = ms_since(t_open);
    std::fprintf(stderr, "%s\n", loader->status().toStdString().c_str());
  }
  s.rss_detail = rss_kib();
  s.peak_detail = status_kib("VmHWM:");
  return true;
}

// Frame times while zooming and panning, ours and the baseline's over the same windows.
struct FrameResults {
  double first_frame_ms = 0;
  bench::FrameStats ours, baseline;
  int64_t peak_frames = 0;  // KiB
};

FrameResults measure_frames(gui::MainWindow& window, int frames) {
  FrameResults f;
  gui::TimelineView* view = window.part<gui::TimelinePage>()->view();
  // Frames are painted into an image of the view's size: the painting itself, without
  // the platform's flush (offscreen here, a compositor on a desktop).
  QImage frame(view->size(), QImage::Format_ARGB32_Premultiplied);
  // The first frame (the whole run) also fills the glyph caches: reported on its own.
  auto t_first = Clock::now();
  view->render(&frame, QPoint(), bench::shown(view));
  f.first_frame_ms = ms_since(t_first);
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
  // As much of it as of ours shows on screen.
  const std::vector<double> plain = bench::replay_on_axis(naive, naive.axis, bench::gestures(frames), 700, frame,
                                                          QRegion(bench::shown(view).boundingRect()));
  f.ours = bench::stats(ours);
  f.baseline = bench::stats(plain);
  f.peak_frames = status_kib("VmHWM:");
  return f;
}

// Find (Ctrl+F) over what the timeline holds: the time taken (ms) and the matches.
std::pair<double, size_t> timed_search(const gui::TimelineView* view, const char* query) {
  const auto t = Clock::now();
  const gui::SearchResults r = gui::searchTimeline(view->data(), query);
  return std::pair(ms_since(t), r.matches.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const BenchArgs args = parse_args(argc, argv);
  const int frames = args.frames;
  const int ranks = args.ranks;
  const std::string path = (std::filesystem::temp_directory_path() / "ddpscope-bench-timeline.ddprun").string();
  const auto tw = Clock::now();
  const int64_t spans = write_run(path, args.target, ranks);
  std::fprintf(stderr, "wrote %lld spans in %.0f ms\n", static_cast<long long>(spans), ms_since(tw));

  const int64_t rss_before = rss_kib();
  gui::MainWindow window(QString{});
  window.resize(1600, 900);
  window.show();
  window.showTab(QStringLiteral("Timeline"));
  QCoreApplication::processEvents();
  const int64_t rss_window = rss_kib();
  OpenStats s;
  if (!open_run(window, path, s)) return 1;
  window.part<gui::TimelinePage>()->view()->fitAll();

  const FrameResults f = measure_frames(window, frames);
  const bench::FrameStats o = f.ours, b = f.baseline;
  // A name of few spans, and of many.
  const auto [optimizer_ms, optimizer_hits] = timed_search(window.part<gui::TimelinePage>()->view(), "optimizer");
  const auto [allreduce_ms, allreduce_hits] = timed_search(window.part<gui::TimelinePage>()->view(), "allreduce");
  nlohmann::ordered_json out = {
      {"spans", spans},
      {"open_to_first_paint_ms", s.open_ms},
      {"frames", frames},
      {"first_frame_ms", f.first_frame_ms},
      {"frame_ms_median", o.median},
      {"frame_ms_p95", o.p95},
      {"frame_ms_max", o.max},
      {"baseline_frame_ms_median", b.median},
      {"baseline_frame_ms_p95", b.p95},
      {"median_ratio_ours_over_baseline", o.median / b.median},
      {"search_optimizer_ms", optimizer_ms},
      {"search_optimizer_matches", optimizer_hits},
      {"search_allreduce_ms", allreduce_ms},
      {"search_allreduce_matches", allreduce_hits},
      {"rss_window_mib", (rss_window - rss_before) / 1024.0},
      {"ranks", ranks},
      {"opened_structure_first", s.structure_first},
      {"open_to_detail_shown_ms", s.detail_ms},
      {"rss_run_open_mib", (s.rss_open - rss_window) / 1024.0},
      {"rss_with_detail_mib", (s.rss_detail - rss_window) / 1024.0},
      {"peak_rss_at_first_paint_mib", s.peak_open / 1024.0},
      {"peak_rss_with_detail_mib", s.peak_detail / 1024.0},
      {"peak_rss_after_frames_mib", f.peak_frames / 1024.0},
      {"peak_rss_process_mib", status_kib("VmHWM:") / 1024.0},
      {"bytes_per_span_in_memory",
       (std::max(s.rss_open, s.rss_detail) - rss_window) * 1024.0 / static_cast<double>(spans)},
      {"run_file_mib", static_cast<double>(std::filesystem::file_size(path)) / (1 << 20)},
      {"run_file_bytes_per_span", static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(spans)}};
  std::printf("%s\n", out.dump(2).c_str());
  if (args.keep) {
    std::fprintf(stderr, "kept %s\n", path.c_str());
  } else {
    std::filesystem::remove(path);
  }
  return 0;
}
