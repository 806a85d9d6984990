// The send/recv view with 100k messages (target: median frame <= 16 ms while zooming and
// panning). 4 workers exchange calls and answers (a parameter-server-like pattern, a
// message every 20 us for 2 s) through the real run store. The baseline, in the same
// run: the plain way of painting a sequence diagram (every message of the run visited,
// those crossing the window drawn as a line, no per-pixel merging). Prints one JSON object.
//
//   QT_QPA_PLATFORM=offscreen build/tests/bench/bench_sequence [messages] [frames]
#include <QApplication>
#include <QPainter>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "frame_bench.h"
#include "run_store_reader.h"
#include "run_store_writer.h"
#include "sequence_view.h"

using namespace ddpscope;
using bench::Clock;
using bench::ms_since;

namespace {

// `messages` messages among 4 workers: worker 0 serves, 1..3 call it; every call is
// answered 40 us later, in contexts of 8 calls.
void write_run(const std::string& path, int64_t messages) {
  std::filesystem::remove(path);
  probes::RunStoreWriter w(path);
  w.begin_run({R"({"job":"bench"})", 4, "mpi", "bench"});
  for (int rank = 0; rank < 4; ++rank) {
    probes::EventBatch b;
    b.rank = rank;
    b.threads = {{0, 1, "rpc: receive"}};
    b.names = {"step", "step"};
    for (int64_t i = 0; i < messages; ++i) {
      const bool call = i % 2 == 0;
      const int trainer = 1 + static_cast<int>((i / 2) % 3);
      const int src = call ? trainer : 0, dst = call ? 0 : trainer;
      const int64_t t_send = i * 20'000 + (call ? 0 : 20'000), t_recv = t_send + 15'000;
      const int64_t msg_id = (int64_t{trainer} << 48) | (i / 2);
      const int64_t ctx = (int64_t{trainer} << 48) | (i / 16);
      for (int end = 0; end < 2; ++end) {
        if ((end == 0 ? src : dst) != rank) continue;
        const int64_t t = end == 0 ? t_send : t_recv;
        b.events.push_back(probes::BatchEvent{
            t, t + 5'000, 4096, ctx, msg_id, -1, call ? 1 : 2, 0, -1, static_cast<int16_t>(end == 0 ? dst : src), 0,
            static_cast<uint8_t>(end == 0 ? probes::Kind::RpcSend : probes::Kind::RpcRecv), 0});
      }
      if (b.events.size() >= 20000) {
        w.write(b);
        b.events.clear();
      }
    }
    if (!b.events.empty()) w.write(b);
  }
  w.end_run("finished");
}

// The plain way: every message visited each frame, each one crossing the window drawn.
class NaiveSequence : public QWidget {
 public:
  explicit NaiveSequence(const gui::SequenceData& data) : m_data(data) {}
  gui::TimeAxis axis;

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), Qt::white);
    p.setRenderHint(QPainter::Antialiasing, true);
    const double spacing = (height() - 40.0) / m_data.workers;
    for (const auto& a : m_data.arrows) {
      if (a.t_recv_ns < axis.begin_ns || a.t_send_ns > axis.end_ns) continue;
      p.setPen(QColor::fromHsv(static_cast<int>(a.kind) * 50, 150, 200));
      p.drawLine(QPointF(90 + axis.toPx(a.t_send_ns), 30 + spacing * (a.src + 0.5)),
                 QPointF(90 + axis.toPx(a.t_recv_ns), 30 + spacing * (a.dst + 0.5)));
    }
  }

 private:
  const gui::SequenceData& m_data;
};

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  const int64_t target = argc > 1 ? std::atoll(argv[1]) : 100'000;
  const int frames = argc > 2 ? std::atoi(argv[2]) : 200;
  const std::string path = (std::filesystem::temp_directory_path() / "ddpscope-bench-sequence.ddprun").string();
  write_run(path, target);

  const auto t_load = Clock::now();
  probes::RunStoreReader reader(path);
  auto data = std::make_shared<gui::SequenceData>(gui::loadSequence(reader, 4));
  const double load_ms = ms_since(t_load);

  gui::SequenceView view;
  view.resize(1400, 700);
  view.show();
  QCoreApplication::processEvents();
  view.setData(data);
  QImage frame(view.size(), QImage::Format_ARGB32_Premultiplied);
  const auto t_first = Clock::now();
  view.render(&frame);
  const double first_frame_ms = ms_since(t_first);
  const int64_t drawn_fit_all = view.drawnArrows();
  const std::vector<double> ours =
      bench::replay(&view, bench::gestures(frames), gui::SequenceView::kLabelWidth + 650, frame);

  NaiveSequence naive(*data);
  naive.resize(view.size());
  naive.show();
  naive.axis.width_px = view.width() - gui::SequenceView::kLabelWidth - 8;
  naive.axis.fit(data->begin_ns, data->end_ns);
  naive.render(&frame);
  const std::vector<double> plain = bench::replay_on_axis(naive, naive.axis, bench::gestures(frames), 650, frame);
  const bench::FrameStats o = bench::stats(ours), b = bench::stats(plain);
  nlohmann::ordered_json out = {{"messages", data->arrows.size()},
                                {"load_ms", load_ms},
                                {"first_frame_ms", first_frame_ms},
                                {"arrows_drawn_whole_run", drawn_fit_all},
                                {"frames", frames},
                                {"frame_ms_median", o.median},
                                {"frame_ms_p95", o.p95},
                                {"frame_ms_max", o.max},
                                {"baseline_frame_ms_median", b.median},
                                {"baseline_frame_ms_p95", b.p95},
                                {"median_ratio_ours_over_baseline", o.median / b.median},
                                {"p95_ratio_ours_over_baseline", o.p95 / b.p95}};
  std::printf("%s\n", out.dump(2).c_str());
  std::filesystem::remove(path);
  return 0;
}
