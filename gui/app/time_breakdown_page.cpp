#include "time_breakdown_page.h"
#include "slow_cause_text.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "kind_colors.h"
#include "sort_proxy.h"
#include "range_summary.h"
#include "run_data.h"
#include "time_format.h"
#include "plural.h"

namespace ddpscope::gui {
namespace {

struct Part {
  const char* name;
  QColor color;
  double TimeBreakdown::*value;
};

// The CPU's phases, or the GPU's split where the run has kernels (time_breakdown.h).
const std::vector<Part>& parts(bool gpu) {
  static const std::vector<Part> cpu = {
      {"forward", kindColor(probes::Kind::Forward), &TimeBreakdown::forward_ms},
      {"backward compute", kindColor(probes::Kind::Backward), &TimeBreakdown::backward_ms},
      {"exposed comm", QColor(0xd6, 0x27, 0x28), &TimeBreakdown::exposed_comm_ms},
      {"optimizer", kindColor(probes::Kind::Optimizer), &TimeBreakdown::optimizer_ms},
      {"idle / other", QColor(0xd9, 0xd9, 0xd9), &TimeBreakdown::idle_ms},
  };
  static const std::vector<Part> on_gpu = {
      {"GPU computation", kindColor(probes::Kind::GpuKernel), &TimeBreakdown::computation_ms},
      {"exposed comm (NCCL kernels)", QColor(0xd6, 0x27, 0x28), &TimeBreakdown::exposed_comm_ms},
      {"GPU idle / other", QColor(0xd9, 0xd9, 0xd9), &TimeBreakdown::idle_ms},
  };
  return gpu ? on_gpu : cpu;
}

bool anyGpu(const std::vector<TimeBreakdown>& rows) {
  return std::any_of(rows.begin(), rows.end(), [](const TimeBreakdown& r) { return r.gpu; });
}

QString ms(double v) { return QString::fromStdString(formatDuration(static_cast<int64_t>(v * 1e6))); }

QTableView* sortableTable(QStandardItemModel* model, QObject* owner) {
  auto* proxy = new SortProxy(owner);
  proxy->setSourceModel(model);
  proxy->setSortRole(kSortRole);
  auto* table = new QTableView;
  table->setModel(proxy);
  table->setSortingEnabled(true);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table->horizontalHeader()->setStretchLastSection(true);
  return table;
}

}  // namespace

BreakdownBars::BreakdownBars(QWidget* parent) : QWidget(parent) { setMinimumHeight(80); }

void BreakdownBars::setRows(std::vector<TimeBreakdown> rows, int straggler) {
  m_rows = std::move(rows);
  m_straggler = straggler;
  updateGeometry();
  update();
}

QSize BreakdownBars::sizeHint() const { return {600, 40 + 34 * static_cast<int>(std::max<size_t>(1, m_rows.size()))}; }

void BreakdownBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QFontMetrics fm = p.fontMetrics();
  // Legend along the top.
  int x = 8;
  const bool gpu = anyGpu(m_rows);
  for (const Part& part : parts(gpu)) {
    p.fillRect(QRect(x, 8, 12, 12), part.color);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(x + 16, 19, tr(part.name));
    x += 16 + fm.horizontalAdvance(tr(part.name)) + 14;
  }
  p.fillRect(QRect(x, 14, 12, 4), kindColor(probes::Kind::Allreduce));
  p.drawText(x + 16, 19, tr("hidden comm (cost nothing)"));
  if (m_rows.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(0, 30, 0, 0), Qt::AlignCenter,
               tr("No iterations recorded: the breakdown needs a DDP training run (ddpscope-cli train)."));
    return;
  }
  double top = 0;
  for (const auto& r : m_rows)
    top = std::max(top, r.iteration_ms);
  const int label = 150, left = label + 8, right = width() - 90;
  const double scale = top > 0 ? (right - left) / top : 0;
  for (size_t i = 0; i < m_rows.size(); ++i) {
    const TimeBreakdown& r = m_rows[i];
    const int y = 34 + static_cast<int>(i) * 34;
    const bool straggler = r.rank == m_straggler || (r.iteration >= 0 && r.straggler);
    p.setPen(straggler ? QColor(0xf2, 0x8e, 0x2b) : palette().color(QPalette::Text));
    const QString name = i < static_cast<size_t>(m_labels.size()) ? m_labels[static_cast<qsizetype>(i)]
                         : straggler                              ? tr("rank %1 · straggler").arg(r.rank)
                                                                  : tr("rank %1").arg(r.rank);
    p.drawText(QRect(8, y, label, 22), Qt::AlignVCenter | Qt::AlignLeft, fm.elidedText(name, Qt::ElideMiddle, label));
    double at = left;
    for (const Part& part : parts(gpu)) {
      const double w = (r.*part.value) * scale;
      if (w <= 0) continue;
      const QRectF seg(at, y, w, 22);
      p.fillRect(seg, part.color);
      const QString text = ms(r.*part.value);
      if (fm.horizontalAdvance(text) + 6 < w) {
        p.setPen(Qt::black);
        p.drawText(seg, Qt::AlignCenter, text);
      }
      at += w;
    }
    p.fillRect(QRectF(left, y + 24, r.hidden_comm_ms * scale, 4), kindColor(probes::Kind::Allreduce));
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(static_cast<int>(at) + 6, y, 84, 22), Qt::AlignVCenter | Qt::AlignLeft, ms(r.iteration_ms));
  }
}

TimeBreakdownPage::TimeBreakdownPage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  m_headline = new QLabel(tr("Open a run to see where its iteration time went."));
  m_headline->setWordWrap(true);
  m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* bar = new QHBoxLayout;
  m_choice = new QComboBox;
  bar->addWidget(new QLabel(tr("Show")));
  bar->addWidget(m_choice);
  bar->addStretch(1);
  layout->addWidget(m_headline);
  layout->addLayout(bar);
  auto* splitter = new QSplitter(Qt::Vertical);
  m_bars = new BreakdownBars;
  splitter->addWidget(m_bars);
  m_rankModel = new QStandardItemModel(0, 9, this);
  m_rankModel->setHorizontalHeaderLabels({tr("Rank"), tr("Iteration"), tr("Forward"), tr("Backward compute"),
                                          tr("Exposed comm"), tr("Optimizer"), tr("Idle / other"), tr("Hidden comm"),
                                          tr("Straggler")});
  m_rankTable = sortableTable(m_rankModel, this);
  m_rankTable->sortByColumn(0, Qt::AscendingOrder);
  splitter->addWidget(m_rankTable);
  m_opsModel = new QStandardItemModel(0, 6, this);
  m_opsModel->setHorizontalHeaderLabels(
      {tr("Top ops: name"), tr("Kind"), tr("Spans"), tr("Ranks"), tr("Total"), tr("Per rank and iteration")});
  m_opsTable = sortableTable(m_opsModel, this);
  // The op's name takes what the numbers leave (elided in the middle when narrow): sized
  // to its longest name it pushed the last column under its own title.
  m_opsTable->horizontalHeader()->setStretchLastSection(false);
  m_opsTable->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  m_opsTable->setTextElideMode(Qt::ElideMiddle);
  splitter->addWidget(m_opsTable);
  layout->addWidget(splitter, 1);
  connect(m_choice, &QComboBox::currentIndexChanged, this, &TimeBreakdownPage::showChoice);
}

void TimeBreakdownPage::setRun(std::shared_ptr<const RunData> run) {
  m_run = std::move(run);
  m_byIteration = m_run ? breakdown_by_iteration(m_run->analysis) : std::vector<TimeBreakdown>{};
  const QString keep = m_choice->currentText();
  QSignalBlocker block(m_choice);
  m_choice->clear();
  m_choice->addItem(tr("Mean iteration (all ranks)"), -1);
  std::vector<int64_t> numbers;
  for (const auto& r : m_byIteration)
    numbers.push_back(r.iteration);
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  for (int64_t n : numbers)
    m_choice->addItem(tr("Iteration %1").arg(n), QVariant::fromValue<qlonglong>(n));
  const int index = m_choice->findText(keep);
  m_choice->setCurrentIndex(index >= 0 ? index : 0);
  showChoice();
}

void TimeBreakdownPage::showChoice() {
  m_rankModel->removeRows(0, m_rankModel->rowCount());
  m_opsModel->removeRows(0, m_opsModel->rowCount());
  if (!m_run || m_byIteration.empty()) {
    m_bars->setRows({}, -1);
    m_headline->setText(m_run ? tr("This run recorded no training iterations, so there is nothing to break down. "
                                   "Runs of ddpscope-cli train (or a job launched from Run ▸ Launch job) have them.")
                              : tr("Open a run to see where its iteration time went."));
    return;
  }
  const int64_t iteration = m_choice->currentData().toLongLong();
  std::vector<TimeBreakdown> rows;
  // The means leave out the stalls the verdict names (as the Summary's do).
  std::vector<TimeBreakdown> unstalled;
  for (const auto& r : m_byIteration)
    if (std::none_of(m_run->cause.stalls.begin(), m_run->cause.stalls.end(),
                     [&](const probes::SlowStall& st) { return st.iteration == r.iteration; }))
      unstalled.push_back(r);
  const std::vector<TimeBreakdown> means = breakdown_by_rank(unstalled);
  // One verdict for every view: the rank the cause analysis names (slow_cause.h); the older
  // per-iteration rule where it has none (imported GPU traces without collectives).
  const int straggler = m_run->cause.not_analysed.empty() ? m_run->cause.straggler.rank : main_straggler(means);
  if (iteration < 0) {
    rows = means;
    // The Straggler column counts what the verdict counts: iterations the job waited for it.
    if (m_run->cause.not_analysed.empty())
      for (auto& r : rows)
        for (const probes::RankWait& w : m_run->cause.waits)
          if (w.rank == r.rank) r.straggled = w.last_in;
  } else {
    for (const auto& r : m_byIteration)
      if (r.iteration == iteration) rows.push_back(r);
  }
  int shown_straggler = iteration < 0 ? straggler : -1;
  for (const auto& r : rows)
    if (iteration >= 0 && r.straggler) shown_straggler = r.rank;
  if (iteration >= 0 && m_run->cause.not_analysed.empty()) {  // the verdict's own, as above
    shown_straggler = -1;
    for (const auto& s : m_run->cause.by_iteration)
      if (s.iteration == iteration) shown_straggler = s.rank;
  }
  m_bars->setRows(rows, shown_straggler);
  m_headline->setText(headline(rows, means, iteration, shown_straggler));
  fillRankTable(rows, iteration, shown_straggler);
  fillTopOps(means, iteration);
}

// The slowest rank's biggest avoidable part, and the straggler.
QString TimeBreakdownPage::headline(const std::vector<TimeBreakdown>& rows, const std::vector<TimeBreakdown>& means,
                                    int64_t iteration, int shown_straggler) const {
  const auto slowest =
      std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.iteration_ms < b.iteration_ms; });
  // breakdown_by_rank leaves out a rank's first iteration when it has three or more.
  const bool warm_upLeftOut = static_cast<size_t>(means.front().iterations) * means.size() < m_byIteration.size();
  const QString over = countOf(means.front().iterations, tr("iteration"));
  QString text = iteration < 0 ? (warm_upLeftOut ? tr("<b>Where the time went</b>, per rank: the mean iteration "
                                                      "over %1 (the first, warm-up, left out).")
                                                       .arg(over)
                                                 : tr("<b>Where the time went</b>, per rank: the mean iteration "
                                                      "over %1.")
                                                       .arg(over))
                               : tr("<b>Where the time went</b> in iteration %1, per rank.").arg(iteration);
  const bool gpu = anyGpu(rows);
  const probes::SlowCause& cause = m_run->cause;
  const bool verdict = iteration < 0 && cause.not_analysed.empty();
  // The rank whose parts are told: the one the others wait for; never a rank that only
  // waits, whose long iteration is the straggler's time, not its own.
  const auto told = std::find_if(rows.begin(), rows.end(), [&](auto& r) { return r.rank == shown_straggler; });
  const auto& about = told != rows.end() ? *told : *slowest;
  const QString whose = told != rows.end() ? tr("Rank %1, the one the others wait for,").arg(about.rank)
                                           : tr("The longest iteration, rank %1's,").arg(about.rank);
  if (verdict) {
    text += QStringLiteral(" <span style='color:%1'><b>%2</b></span>")
                .arg(cause.straggler.rank >= 0 ? QStringLiteral("#f28e2b") : QStringLiteral("#555555"))
                .arg(QString::fromStdString(probes::slow_cause_verdict(cause)).toHtmlEscaped());
  }
  if (gpu)
    text += tr(" From the GPU's kernels. %1 took %2: GPU computation %3, exposed communication "
               "(NCCL kernels with no computation beside them) %4, GPU idle / other %5.")
                .arg(whose)
                .arg(ms(about.iteration_ms), ms(about.computation_ms), ms(about.exposed_comm_ms), ms(about.idle_ms));
  else
    text +=
        tr(" %1 took %2: forward %3, backward %4, exposed communication %5%6, idle %7.")
            .arg(whose)
            .arg(ms(about.iteration_ms), ms(about.forward_ms), ms(about.backward_ms), ms(about.exposed_comm_ms),
                 about.wait_iterations > 0 ? tr(" (%1 of it waiting for other ranks)").arg(ms(about.exposed_wait_ms))
                                           : QString(),
                 ms(about.idle_ms));
  if (verdict) return text;  // the verdict named the straggler, or that none stands out
  if (shown_straggler >= 0) {
    const auto s = std::find_if(means.begin(), means.end(), [&](auto& m) { return m.rank == shown_straggler; });
    text += iteration < 0 ? (gpu ? tr(" <span style='color:#f28e2b'><b>Straggler: rank %1</b></span>, whose GPU "
                                      "computation took longest in %2 of %3 iterations; the others wait for it in "
                                      "their NCCL kernels.")
                                 : tr(" <span style='color:#f28e2b'><b>Straggler: rank %1</b></span>, last to start "
                                      "its allreduces in %2 of %3 iterations; the others wait for it."))
                                .arg(shown_straggler)
                                .arg(s->straggled)
                                .arg(static_cast<qlonglong>(m_byIteration.size() / means.size()))
                          : tr(" <span style='color:#f28e2b'><b>Straggler: rank %1</b></span> in this iteration.")
                                .arg(shown_straggler);
  }
  return text;
}

void TimeBreakdownPage::fillRankTable(const std::vector<TimeBreakdown>& rows, int64_t iteration, int shown_straggler) {
  const bool gpu = anyGpu(rows);
  // The columns follow the split: the CPU's phases, or the GPU's.
  // Two lines a title of two words or more: in one, the ten columns did not fit 1280 pixels
  // beside the run list and the last, the straggler's, was cut to "straggl...".
  const auto two_lines = [](QString title) {
    const qsizetype space = title.indexOf(' ', title.size() / 2 - 1);
    if (space > 0) title[space] = '\n';
    return title;
  };
  QStringList headers = {tr("Rank"), tr("Iteration")};
  for (const Part& part : parts(gpu))
    headers << two_lines(tr(part.name));
  headers << two_lines(tr("Of exposed: waiting")) << two_lines(tr("Hidden comm")) << tr("Straggler");
  m_rankModel->setColumnCount(static_cast<int>(headers.size()));
  m_rankModel->setHorizontalHeaderLabels(headers);
  for (const auto& r : rows) {
    QList<QStandardItem*> row;
    row << sortableCell(QString::number(r.rank), r.rank) << sortableCell(ms(r.iteration_ms), r.iteration_ms);
    for (const Part& part : parts(gpu))
      row << sortableCell(ms(r.*part.value), r.*part.value);
    // Waiting for other ranks, of the exposed communication: "–" where no rank had another to wait for.
    row << (r.wait_iterations > 0 ? sortableCell(ms(r.exposed_wait_ms), r.exposed_wait_ms)
                                  : sortableCell(QStringLiteral("–"), -1.0));
    row << sortableCell(ms(r.hidden_comm_ms), r.hidden_comm_ms);
    const bool s = r.rank == shown_straggler;
    row << sortableCell(iteration < 0 ? countOf(r.straggled, tr("iteration")) : (s ? tr("yes") : QString()),
                        QVariant::fromValue<qlonglong>(iteration < 0 ? r.straggled : s));
    if (s)
      for (auto* item : row)
        item->setForeground(QColor(0xf2, 0x8e, 0x2b));
    m_rankModel->appendRow(row);
  }
}

void TimeBreakdownPage::fillTopOps(const std::vector<TimeBreakdown>& means, int64_t iteration) {
  // Top ops: the spans of the chosen iteration (or of every iteration but the first).
  const TimelineData& t = m_run->timeline;
  int64_t begin = t.begin_ns, end = t.end_ns;
  double per = static_cast<double>(std::max<size_t>(1, means.size())) * std::max<int64_t>(1, means.front().iterations);
  // The mean: from the second iteration to the end of the last whole one, so that an
  // iteration an error cut short (and the job's end after it) is not divided among the others.
  const auto& cut = m_run->analysis.cut_short;
  if (iteration < 0) end = begin;
  for (const auto& it : t.iterations) {
    if (iteration >= 0 && it.number == iteration)
      begin = it.first, end = it.second, per = static_cast<double>(means.size());
    if (iteration < 0 && t.iterations.size() > 2 && &it == &t.iterations[1]) begin = it.first;
    if (iteration < 0 && std::none_of(cut.begin(), cut.end(), [&](auto& c) { return c.iteration == it.number; }))
      end = std::max(end, it.second);
  }
  if (iteration < 0 && end <= begin) end = t.end_ns;
  const RangeSummary ops = summarizeRange(t, begin, end);
  for (size_t i = 0; i < ops.rows.size() && i < 50; ++i) {
    const RangeRow& r = ops.rows[i];
    QList<QStandardItem*> row;
    row << sortableCell(QString::fromStdString(r.name), QString::fromStdString(r.name))
        << sortableCell(kindLabel(r.kind), kindLabel(r.kind))
        << sortableCell(QString::number(r.count), QVariant::fromValue<qlonglong>(r.count))
        << sortableCell(QString::number(r.ranks), r.ranks)
        << sortableCell(QString::fromStdString(formatDuration(r.total_ns)), QVariant::fromValue<qlonglong>(r.total_ns))
        << sortableCell(
               QString::fromStdString(formatDuration(static_cast<int64_t>(static_cast<double>(r.total_ns) / per))),
               static_cast<double>(r.total_ns) / per);
    row[1]->setData(kindColor(r.kind), Qt::DecorationRole);
    m_opsModel->appendRow(row);
  }
  m_opsTable->sortByColumn(4, Qt::DescendingOrder);
}

void TimeBreakdownPage::showRun(const ShownRun& shown) { setRun(shown.run); }

}  // namespace ddpscope::gui
