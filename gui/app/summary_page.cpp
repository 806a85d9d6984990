#include "summary_page.h"
#include "plural.h"

#include <QFileInfo>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "arrival_wait.h"
#include "collective_bandwidth.h"
#include "rank_bandwidth.h"
#include "slow_cause_text.h"

namespace ddpscope::gui {

SummaryPage::SummaryPage(QWidget* parent) : QLabel(parent) {
  setText(
      tr("Open a run: pick one on the left or use File > Open (a PyTorch job's profiler "
         "traces too: a folder or the files, or drop them here). Or launch a job: Run > Launch job."));
  setAlignment(Qt::AlignTop | Qt::AlignLeft);
  setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::LinksAccessibleByMouse);
  setMargin(12);
  setWordWrap(true);
  // "gap:RANK:BEGIN:END": a GPU gap's link, shown in the timeline.
  connect(this, &QLabel::linkActivated, this, [this](const QString& link) {
    const QStringList parts = link.split(':');
    if (parts.size() == 4 && parts[0] == QLatin1String("gap"))
      emit gapClicked(parts[1].toInt(), parts[2].toLongLong(), parts[3].toLongLong());
  });
}

namespace {

// Ranks listed at most; a wider job lists its slowest.
constexpr size_t kMaxRankRows = 16;

// A stream's track name ("GPU 0 stream 7"), as the timeline shows it.
QString streamName(const std::vector<TimelineLane>& lanes, int rank, int thread) {
  for (const auto& l : lanes)
    if (l.rank == rank && l.thread == thread) return QString::fromStdString(l.thread_name);
  return QObject::tr("track %1").arg(thread);
}

// The GPU time table: one row per rank with its kernels' time by class, idle and overlap.
QString gpuRanksHtml(const probes::GpuTimeBreakdown& gpu) {
  QString html = QObject::tr(
      "<h4>GPU time</h4><p>As Holistic Trace Analysis computes it, over the whole trace but its last "
      "ProfilerStep: kernels classed as communication (NCCL), memory (copies, sets) and computation "
      "(the rest); idle is the time between the first and last kernel when none ran; overlap is the "
      "share of communication that ran beside computation.</p>");
  html += QObject::tr(
      "<table cellpadding=4><tr><th>rank</th><th>kernels</th><th>span (ms)</th><th>computation (ms)</th>"
      "<th>communication (ms)</th><th>memory (ms)</th><th>idle (ms)</th><th>idle share</th>"
      "<th>overlap</th></tr>");
  for (const auto& r : gpu.ranks) {
    html += QStringLiteral(
                "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td>"
                "<td>%8</td><td>%9</td></tr>")
                .arg(r.rank)
                .arg(r.kernels)
                .arg(r.span_ms, 0, 'f', 3)
                .arg(r.computation_ms, 0, 'f', 3)
                .arg(r.communication_ms, 0, 'f', 3)
                .arg(r.memory_ms, 0, 'f', 3)
                .arg(r.idle_ms, 0, 'f', 3)
                .arg(r.span_ms > 0 ? QStringLiteral("%1%").arg(100 * r.idle_ms / r.span_ms, 0, 'f', 0)
                                   : QStringLiteral("–"))
                .arg(std::isnan(r.overlap_ratio) ? QStringLiteral("–") : QString::number(r.overlap_ratio, 'f', 2));
  }
  html += QStringLiteral("</table>");
  return html;
}

// Idle by cause, all streams of a rank together (HTA's idle-time breakdown).
QString gpuIdleHtml(const probes::GpuTimeBreakdown& gpu) {
  std::map<int, probes::GpuStreamIdle> idle;
  for (const auto& s : gpu.idle) {
    auto& r = idle[s.rank];
    r.rank = s.rank;
    r.host_wait_ms += s.host_wait_ms;
    r.kernel_wait_ms += s.kernel_wait_ms;
    r.other_ms += s.other_ms;
  }
  QString html = QObject::tr(
      "<p>Why the streams stood idle (each stream's gaps, summed over the rank's streams): <i>host wait</i>, the CPU "
      "launched the next kernel only after the "
      "stream ran dry; <i>kernel wait</i>, gaps under 30 µs between back-to-back kernels (launch "
      "overhead); <i>other</i>, the rest (waiting on another stream, a synchronisation).</p>"
      "<table cellpadding=4><tr><th>rank</th><th>host wait (ms)</th><th>kernel wait (ms)</th>"
      "<th>other (ms)</th></tr>");
  for (const auto& [rank, r] : idle)
    html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                .arg(rank)
                .arg(r.host_wait_ms, 0, 'f', 3)
                .arg(r.kernel_wait_ms, 0, 'f', 3)
                .arg(r.other_ms, 0, 'f', 3);
  html += QStringLiteral("</table>");
  return html;
}

// The queues behind the streams, and the longest stretches with the whole GPU idle.
QString gpuQueuesAndGapsHtml(const probes::GpuTimeBreakdown& gpu, const std::vector<TimelineLane>& threads) {
  QString html = QObject::tr(
      "<p>Each stream's queue: kernels the CPU launched that had not finished yet (near 0: the GPU waits "
      "for the CPU; long: the CPU runs ahead).</p><table cellpadding=4><tr><th>rank</th><th>stream</th>"
      "<th>most queued</th><th>mean queued</th></tr>");
  for (const auto& q : gpu.queues)
    html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                .arg(q.rank)
                .arg(streamName(threads, q.rank, q.thread).toHtmlEscaped())
                .arg(q.max_queued)
                .arg(q.mean_queued, 0, 'f', 1);
  html += QStringLiteral("</table>");
  if (!gpu.longest_gaps.empty()) {
    html += QObject::tr(
        "<p>The longest stretches with every stream of a rank idle (click one to see it in the "
        "timeline):</p><ul>");
    for (const auto& g : gpu.longest_gaps)
      html += QObject::tr("<li>rank %1: <a href=\"gap:%1:%2:%3\">%4 ms idle</a></li>")
                  .arg(g.rank)
                  .arg(g.begin_ns)
                  .arg(g.end_ns)
                  .arg(g.ms(), 0, 'f', 3);
    html += QStringLiteral("</ul>");
  }
  return html;
}

// The stragglers found in the ranks' GPU computation, the first few of them.
QString gpuStragglersHtml(const std::vector<probes::Straggler>& stragglers) {
  std::vector<probes::Straggler> on_gpu;
  for (const auto& s : stragglers)
    if (s.gpu) on_gpu.push_back(s);
  if (on_gpu.empty())
    return QObject::tr("<p>No straggler: in every iteration the ranks' GPU computation took about as long.</p>");
  QString html = QObject::tr("<p><b>Stragglers</b> (the others wait for them in their NCCL kernels):</p><ul>");
  constexpr size_t kShown = 10;  // the first ones; `stats --json` lists every one
  for (size_t i = 0; i < std::min(kShown, on_gpu.size()); ++i) {
    const auto& s = on_gpu[i];
    html += QObject::tr("<li>iteration %1: rank %2 computed %3 ms, %4 ms more than the others' median</li>")
                .arg(s.iteration)
                .arg(s.rank)
                .arg(s.computation_ms, 0, 'f', 3)
                .arg(s.lag_ms, 0, 'f', 3);
  }
  if (on_gpu.size() > kShown)
    html +=
        QObject::tr("<li>and %1 more (ddpscope-cli stats RUN --json lists them all)</li>").arg(on_gpu.size() - kShown);
  html += QStringLiteral("</ul>");
  return html;
}

// The Summary's GPU time (docs/gpu.md, "GPU time": HTA's definitions and window), per rank,
// its idle time by cause, and the stragglers by iteration.
QString gpuTimeHtml(const probes::GpuTimeBreakdown& gpu, const std::vector<probes::Straggler>& stragglers,
                    const std::vector<TimelineLane>& threads) {
  return gpuRanksHtml(gpu) + gpuIdleHtml(gpu) + gpuQueuesAndGapsHtml(gpu, threads) + gpuStragglersHtml(stragglers);
}

QString megabytes(int64_t bytes) { return QString::number(static_cast<double>(bytes) / (1 << 20), 'f', 1); }

// Optimizer-state memory per rank (the optimizer_state_bytes metric); with ZeRO, what each
// rank owns and what a plain optimizer would hold on every rank.
QString optimizerStateHtml(const RunData& d) {
  const auto rows = optimizerStateRows(d);
  if (rows.empty()) return {};
  QString html = QObject::tr("<h4>Optimizer state</h4>");
  if (d.zero_shards.empty()) {
    html +=
        QObject::tr("<p>Every rank holds the whole optimizer state: %1 MiB each.</p>").arg(megabytes(rows[0].bytes));
    return html;
  }
  int64_t total = 0;
  for (const auto& r : rows)
    total += r.bytes;
  html += QObject::tr(
              "<p>ZeRO: each rank keeps the state of the parameters it owns, steps them and broadcasts them "
              "to the others after the step (param_sync in the timeline). A plain optimizer would hold "
              "%1 MiB on every rank.</p>")
              .arg(megabytes(total));
  html += QObject::tr(
      "<table cellpadding=4><tr><th>rank</th><th>owns</th><th>elements</th><th>state (MiB)</th>"
      "<th>share</th></tr>");
  for (const auto& r : rows) {
    html += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5%</td></tr>")
                .arg(r.rank)
                .arg(countOf(r.owned_parameters, QObject::tr("parameter")))
                .arg(r.owned_elements)
                .arg(megabytes(r.bytes))
                .arg(total > 0 ? 100.0 * static_cast<double>(r.bytes) / static_cast<double>(total) : 0.0, 0, 'f', 0);
  }
  html += QStringLiteral("</table>");
  return html;
}

// A rank's bus bandwidth as its cell: "1.52 GB/s", with its share of the links' measured
// ceiling when there is one ("1.52 GB/s (81%)"); "–" without bucket allreduces to time.
QString busCell(const std::map<int, probes::BucketBusTotals>& bus, int rank, double ceiling_gbps) {
  const auto it = bus.find(rank);
  const double gbps = it == bus.end() ? std::nan("") : it->second.gbps();
  if (std::isnan(gbps)) return QStringLiteral("<td>–</td>");
  QString text = QString::fromStdString(probes::rate_text(gbps));
  if (ceiling_gbps > 0) text += QStringLiteral(" (%1%)").arg(std::lround(100 * gbps / ceiling_gbps));
  return QStringLiteral("<td>%1</td>").arg(text);
}

// One rank's row of the Summary's table; `gpu` adds the CPU's view of communication.
QString rankRowHtml(const probes::RankRow& r, const probes::RankSums& m, bool gpu, const QString& busCellHtml) {
  const int n = m.n;
  const double comm = m.comm, exposed = m.exposed;
  const QString overlap = comm > 0 ? QString::number(1 - exposed / comm, 'f', 2) : QStringLiteral("–");
  const auto mean = [n](double v) { return QString::number(n ? v / n : 0, 'f', 3); };
  const QString cpu =
      gpu ? QStringLiteral("<td>%1</td><td>%2</td>").arg(mean(m.cpu_comm), mean(m.cpu_exposed)) : QString();
  // Exposed communication as waiting for the other ranks and transfer (arrival_wait.h).
  const auto waitMean = [&m](double v) {
    return m.wait_n ? QString::number(v / m.wait_n, 'f', 3) : QStringLiteral("–");
  };
  const QString split =
      QStringLiteral("<td>%1</td><td>%2</td>").arg(waitMean(m.exposed_wait), waitMean(m.exposed_transfer));
  return QStringLiteral(
             "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td>"
             "%8<td>%9</td>")
             .arg(r.rank)
             .arg(QString::fromStdString(r.host).toHtmlEscaped())
             .arg(n)
             .arg(mean(m.iteration), mean(m.compute), mean(comm), mean(exposed), split, overlap) +
         busCellHtml + cpu + QStringLiteral("<td>%1</td><td>%2</td></tr>").arg(r.events_received).arg(r.events_dropped);
}

// The run's name, status, ranks, backend, model and start (those the run records: an
// imported folder of dumps has no model or backend), then its non-finite and rejected notes.
QString runHeaderHtml(const RunData& d) {
  const auto escaped = [](const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); };
  QString status = QStringLiteral("status <b>%1</b>").arg(escaped(d.run.status));
  if (!d.run.message.empty()) status += QStringLiteral(" (%1)").arg(escaped(d.run.message));
  QStringList facts{status, countOf(d.run.world_size, "rank", "ranks")};
  if (!d.run.backend.empty()) facts << QObject::tr("%1 backend").arg(escaped(d.run.backend));
  if (!d.run.model.empty()) facts << QObject::tr("model %1").arg(escaped(d.run.model));
  if (!d.run.created_at.empty()) facts << QObject::tr("started %1").arg(escaped(d.run.created_at));
  QString html =
      QStringLiteral("<h3>%1</h3><p>%2</p>")
          .arg(QFileInfo(QString::fromStdString(d.path)).fileName().toHtmlEscaped(), facts.join(QStringLiteral(" · ")));
  if (!d.nonfinite.empty()) {
    html += QStringLiteral("<p style='color:#c62828'><b>%1</b></p>")
                .arg(QString::fromStdString(d.nonfinite).toHtmlEscaped());
  }
  if (!d.rejected.empty()) {
    html += QStringLiteral("<p style='color:#c62828'><b>%1</b></p>")
                .arg(QString::fromStdString(d.rejected).toHtmlEscaped());
  }
  return html;
}

// Why the iterations are slow, first: the rank the others wait for and in which phase, or
// that none stands out (slow_cause.h, the verdict of `ddpscope-cli why`), and each stall.
QString causeHtml(const RunData& d) {
  const probes::SlowCause& c = d.cause;
  if (c.ranks < 2) return {};  // one rank waits for no one
  const bool found = c.straggler.rank >= 0;
  QString html = QStringLiteral("<p%1><b>%2</b> %3</p>")
                     .arg(found ? QStringLiteral(" style='color:#b85c00'") : QString())
                     .arg(QObject::tr("Why:"))
                     .arg(QString::fromStdString(probes::slow_cause_verdict(c)).toHtmlEscaped());
  if (!d.network_bound.empty())
    html += QStringLiteral("<p><b>%1</b> %2</p>")
                .arg(QObject::tr("Network:"), QString::fromStdString(d.network_bound).toHtmlEscaped());
  for (const probes::SlowStall& st : c.stalls) {
    html += QStringLiteral("<p style='color:#c62828'><b>%1</b> %2</p>")
                .arg(QObject::tr("Stall:"))
                .arg(QString::fromStdString(probes::slow_stall_sentence(st)).toHtmlEscaped() +
                     QObject::tr(" Left out of the means below."));
  }
  return html;
}

// A run with no iteration at all (flight-recorder dumps imported: collectives, no step's
// time): a table of zeros would read as measured. What it holds is said instead, with the
// hang verdict its records give.
QString noTimingsHtml(const RunData& d) {
  QString html = QObject::tr(
                     "<p><b>No timings:</b> this run holds no iterations, only what its %1 recorded "
                     "(a run imported from flight-recorder dumps holds their collectives, not how long "
                     "steps took), so there is nothing to time or average.</p>")
                     .arg(countOf(static_cast<qint64>(d.ranks.size()), QObject::tr("rank")));
  if (!d.hang.verdict.empty())
    html += QObject::tr("<p><b>What happened</b> (the Hang tab has the grid): %1</p>")
                .arg(QString::fromStdString(d.hang.verdict).toHtmlEscaped());
  for (const auto& f : d.hang.findings)
    if (f != d.hang.verdict && f.rfind("no dump of", 0) == 0)
      html += QStringLiteral("<p>%1</p>").arg(QString::fromStdString(f).toHtmlEscaped());
  return html;
}

}  // namespace

void SummaryPage::setRun(const RunData& d) {
  QString html = runHeaderHtml(d);
  if (d.analysis.iterations.empty() && !d.ranks.empty()) {
    setText(html + noTimingsHtml(d));
    return;
  }
  html += causeHtml(d);
  if (!d.analysis.cut_short.empty()) html += cutShortHtml(d);
  // The table comes after the note about the rows it leaves out. GPU truth first: where
  // ranks ran kernels, compute and communication are the GPU's, and the CPU's view
  // (launch and enqueue time) has columns of its own.
  const bool gpu = std::any_of(d.analysis.iterations.begin(), d.analysis.iterations.end(),
                               [](const auto& it) { return it.from_gpu; });
  if (gpu) {
    html +=
        tr("<p>Compute, comm, exposed and overlap are the <b>GPU's</b>: the merged time of the computation "
           "and NCCL kernels each iteration launched, all streams together. The CPU columns are the "
           "CPU's view of communication: launch and enqueue time.</p>");
  }
  html += rankTableHtml(d, gpu);
  html += optimizerStateHtml(d);
  if (!d.gpu.empty()) html += gpuTimeHtml(d.gpu, probes::find_stragglers(d.analysis), d.timeline.lanes);
  setText(html);
}

// A failed run: the iteration each rank was in when it failed is not a time to average
// (a 5 s wait would name its rank the slowest); it is named instead.
QString SummaryPage::cutShortHtml(const RunData& d) {
  QStringList cut;
  for (const auto& c : d.analysis.cut_short) {
    if (cut.size() == 8) {
      cut << tr("…");
      break;
    }
    cut << tr("rank %1's iteration %2 (%3 ms until the error)")
               .arg(c.rank)
               .arg(c.iteration)
               .arg((c.t_end_ns - c.t_begin_ns) / 1e6, 0, 'f', 1);
  }
  QString html = tr("<p><b>Left out of the means</b>, cut short by an error: %1.").arg(cut.join(QStringLiteral(", ")));
  if (!d.hang.verdict.empty())
    html += tr(" What happened: %1").arg(QString::fromStdString(d.hang.verdict).toHtmlEscaped());
  html += QStringLiteral("</p>");
  return html;
}

// The per-rank table of mean iteration, compute and communication, preceded by a note
// when only the slowest ranks are listed.
QString SummaryPage::rankTableHtml(const RunData& d, bool gpu) {
  QString html;
  QString table =
      QStringLiteral(
          "<table cellpadding=4><tr><th>rank</th><th>host</th><th>iterations</th>"
          "<th>mean iteration (ms)</th><th>%1compute (ms)</th><th>%1comm (ms)</th>"
          "<th>%1exposed (ms)</th><th>of it waiting (ms)</th><th>transfer (ms)</th><th>overlap</th>"
          "<th>bus bandwidth%3</th>%2<th>events</th><th>dropped</th></tr>")
          .arg(gpu ? tr("GPU ") : QString(), gpu ? tr("<th>CPU comm (ms)</th><th>CPU exposed (ms)</th>") : QString(),
               d.links.ring_ceiling_gbps > 0 ? tr(" (of ceiling)") : QString());
  std::set<int64_t> stalled;  // named above the table, and left out of its means
  for (const probes::SlowStall& st : d.cause.stalls)
    stalled.insert(st.iteration);
  std::map<int, probes::RankSums> means = probes::rank_sums(d.analysis, stalled);
  const std::map<int, probes::BucketBusTotals> bus = busByRank(d, stalled);
  // A wide job lists its slowest ranks only (a thousand rows would bury the rest); the
  // Ranks tab shows every one.
  std::vector<probes::RankRow> shown = d.ranks;
  if (shown.size() > kMaxRankRows) {
    const auto mean = [&](const probes::RankRow& r) {
      const auto it = means.find(r.rank);
      return it == means.end() || it->second.n == 0 ? 0.0 : it->second.iteration / it->second.n;
    };
    std::stable_sort(shown.begin(), shown.end(), [&](auto& a, auto& b) { return mean(a) > mean(b); });
    shown.resize(kMaxRankRows);
    html += tr("<p>The %1 slowest of %2 ranks by mean iteration; the Ranks tab shows every rank.</p>")
                .arg(kMaxRankRows)
                .arg(d.ranks.size());
  }
  bool mostlyWaits = false;
  for (const auto& r : shown) {
    const probes::RankSums m = means.count(r.rank) ? means[r.rank] : probes::RankSums{};
    table += rankRowHtml(r, m, gpu, busCell(bus, r.rank, d.links.ring_ceiling_gbps));
    mostlyWaits = mostlyWaits || (m.wait_n > 0 && m.n > 0 &&
                                  probes::mostly_waits(m.exposed_wait / m.wait_n, m.exposed / m.n, m.iteration / m.n));
  }
  html += table + QStringLiteral("</table>");
  if (mostlyWaits)
    html +=
        tr("<p>Exposed communication is waiting for the other ranks to arrive plus transfer after the "
           "last one arrived. A rank that mostly waits is not slow itself: it waits for another rank.</p>");
  return html;
}

}  // namespace ddpscope::gui
