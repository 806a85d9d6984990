#include "main_window.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QScrollArea>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedBarSeries>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QValueAxis>
#include <cmath>

#include "bucket_table_model.h"
#include "chrome_trace_export.h"
#include "overlap_model.h"
#include "run_list_model.h"
#include "timeline_view.h"

namespace ddpscope::gui {

MainWindow::MainWindow(const QString& workspaceFolder, QWidget* parent)
    : QMainWindow(parent),
      m_runList(new RunListModel(this)),
      m_buckets(new BucketTableModel(this)),
      m_overlap(new OverlapModel(this)) {
  setWindowTitle(QStringLiteral("ddpscope"));
  auto* splitter = new QSplitter(this);

  auto* runs = new QTableView(splitter);
  runs->setModel(m_runList);
  runs->setSelectionBehavior(QAbstractItemView::SelectRows);
  runs->setSelectionMode(QAbstractItemView::SingleSelection);
  runs->verticalHeader()->hide();
  runs->horizontalHeader()->setStretchLastSection(true);
  connect(runs->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) openRun(current.data(RunListModel::PathRole).toString());
          });

  m_tabs = new QTabWidget(splitter);
  m_summary = new QLabel(tr("Open a run: pick one on the left or use File > Open."));
  m_summary->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_summary->setMargin(12);
  m_tabs->addTab(m_summary, tr("Summary"));

  m_timeline = new TimelineView;
  auto* timelineScroll = new QScrollArea;
  timelineScroll->setWidget(m_timeline);
  timelineScroll->setWidgetResizable(true);
  m_tabs->addTab(timelineScroll, tr("Timeline"));
  connect(m_timeline, &TimelineView::spanClicked, this,
          [this](const QString& text) { statusBar()->showMessage(text); });

  auto* overlapPage = new QWidget;
  auto* overlapLayout = new QVBoxLayout(overlapPage);
  auto* overlapBar = new QHBoxLayout;
  m_overlapRank = new QComboBox;
  overlapBar->addWidget(new QLabel(tr("Rank")));
  overlapBar->addWidget(m_overlapRank);
  overlapBar->addStretch();
  overlapLayout->addLayout(overlapBar);
  m_overlapChart = new QChartView;
  m_overlapChart->setRenderHint(QPainter::Antialiasing);
  m_overlapChart->setMinimumHeight(260);
  overlapLayout->addWidget(m_overlapChart, 2);
  auto* overlapTable = new QTableView;
  overlapTable->setModel(m_overlap);
  overlapTable->verticalHeader()->hide();
  overlapTable->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  overlapLayout->addWidget(overlapTable, 1);
  connect(m_overlapRank, &QComboBox::currentIndexChanged, this, [this] { updateOverlap(); });
  m_tabs->addTab(overlapPage, tr("Overlap"));

  auto* bucketPage = new QWidget;
  auto* bucketLayout = new QVBoxLayout(bucketPage);
  auto* bucketBar = new QHBoxLayout;
  m_bucketRank = new QComboBox;
  m_bucketIteration = new QSpinBox;
  bucketBar->addWidget(new QLabel(tr("Rank")));
  bucketBar->addWidget(m_bucketRank);
  bucketBar->addWidget(new QLabel(tr("Iteration")));
  bucketBar->addWidget(m_bucketIteration);
  bucketBar->addStretch();
  bucketLayout->addLayout(bucketBar);
  auto* bucketTable = new QTableView;
  bucketTable->setModel(m_buckets);
  bucketTable->verticalHeader()->hide();
  bucketTable->horizontalHeader()->setStretchLastSection(true);
  bucketLayout->addWidget(bucketTable);
  connect(m_bucketRank, &QComboBox::currentIndexChanged, this, [this] { updateBuckets(); });
  connect(m_bucketIteration, &QSpinBox::valueChanged, this, [this] { updateBuckets(); });
  m_tabs->addTab(bucketPage, tr("Buckets"));

  splitter->setStretchFactor(1, 3);
  setCentralWidget(splitter);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open run..."), QKeySequence::Open, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open run"), m_runList->folder(),
                                                      tr("Run files (*.ddprun);;All files (*)"));
    if (!path.isEmpty()) openRun(path);
  });
  file->addAction(tr("&Refresh runs"), QKeySequence::Refresh, m_runList, &RunListModel::refresh);
  file->addAction(tr("Export &Chrome trace..."), this, &MainWindow::exportChromeTrace);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  connect(this, &MainWindow::loadFailed, this,
          [this](const QString& message) { statusBar()->showMessage(message); });
  m_runList->setFolder(workspaceFolder);
  resize(1200, 760);
}

MainWindow::~MainWindow() = default;

bool MainWindow::openRun(const QString& path) {
  std::unique_ptr<RunData> run;
  try {
    run = std::make_unique<RunData>(load_run(path.toStdString()));
  } catch (const std::exception& e) {
    // No exception crosses the event loop: the window says what went wrong.
    emit loadFailed(tr("Cannot open %1: %2").arg(path, QString::fromUtf8(e.what())));
    return false;
  }
  m_buckets->setRun(nullptr, 0, 0);
  m_overlap->setRun(nullptr);
  m_run = std::move(run);
  setWindowTitle(QStringLiteral("ddpscope — %1").arg(QFileInfo(path).fileName()));
  const QSignalBlocker a(m_overlapRank), b(m_bucketRank), c(m_bucketIteration);
  m_overlapRank->clear();
  m_bucketRank->clear();
  for (const auto& r : m_run->ranks) {
    m_overlapRank->addItem(QString::number(r.rank), r.rank);
    m_bucketRank->addItem(QString::number(r.rank), r.rank);
  }
  int64_t last = 1;
  for (const auto& it : m_run->analysis.iterations)
    last = std::max(last, it.iteration);
  m_bucketIteration->setRange(1, static_cast<int>(last));
  m_bucketIteration->setValue(std::min<int>(2, static_cast<int>(last)));  // past warm-up
  showSummary();
  m_timeline->setData(m_run->timeline);
  m_timeline->showIteration(m_run->timeline.iterations.size() > 1 ? 1 : 0);  // past warm-up
  updateOverlap();
  updateBuckets();
  statusBar()->showMessage(tr("%1: %2 spans").arg(path).arg(m_run->span_count));
  return true;
}

void MainWindow::showSummary() {
  const RunData& d = *m_run;
  QString html =
      QStringLiteral(
          "<h3>%1</h3><p>status <b>%2</b>%3 · %4 ranks · %5 backend · "
          "model %6 · started %7</p>")
          .arg(QFileInfo(QString::fromStdString(d.path)).fileName().toHtmlEscaped(),
               QString::fromStdString(d.run.status).toHtmlEscaped(),
               d.run.message.empty() ? QString()
                                     : QStringLiteral(" (%1)").arg(
                                           QString::fromStdString(d.run.message).toHtmlEscaped()))
          .arg(d.run.world_size)
          .arg(QString::fromStdString(d.run.backend).toHtmlEscaped(),
               QString::fromStdString(d.run.model).toHtmlEscaped(),
               QString::fromStdString(d.run.created_at).toHtmlEscaped());
  html += QStringLiteral(
      "<table cellpadding=4><tr><th>rank</th><th>host</th><th>iterations</th>"
      "<th>mean iteration (ms)</th><th>comm (ms)</th><th>exposed (ms)</th>"
      "<th>overlap</th><th>events</th><th>dropped</th></tr>");
  for (const auto& r : d.ranks) {
    int n = 0;
    double iteration = 0, comm = 0, exposed = 0;
    for (const auto& it : d.analysis.iterations) {
      if (it.rank != r.rank || it.iteration <= 1) continue;  // skip warm-up
      ++n;
      iteration += it.iteration_ms;
      comm += it.comm_ms;
      exposed += it.exposed_comm_ms;
    }
    const QString overlap =
        comm > 0 ? QString::number(1 - exposed / comm, 'f', 2) : QStringLiteral("–");
    html += QStringLiteral(
                "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td>"
                "<td>%7</td><td>%8</td><td>%9</td></tr>")
                .arg(r.rank)
                .arg(QString::fromStdString(r.host).toHtmlEscaped())
                .arg(n)
                .arg(n ? iteration / n : 0, 0, 'f', 3)
                .arg(n ? comm / n : 0, 0, 'f', 3)
                .arg(n ? exposed / n : 0, 0, 'f', 3)
                .arg(overlap)
                .arg(r.events_received)
                .arg(r.events_dropped);
  }
  html += QStringLiteral("</table>");
  m_summary->setText(html);
}

void MainWindow::updateOverlap() {
  if (!m_run) return;
  const int rank = m_overlapRank->currentData().toInt();
  m_overlap->setRun(m_run.get(), rank);
  // Stacked per iteration: compute, communication hidden behind it, exposed communication.
  auto* compute = new QBarSet(tr("compute"));
  auto* hidden = new QBarSet(tr("overlapped comm"));
  auto* exposed = new QBarSet(tr("exposed comm"));
  compute->setColor(QColor(0x4c, 0x78, 0xa8));
  hidden->setColor(QColor(0x59, 0xa1, 0x4f));
  exposed->setColor(QColor(0xe1, 0x57, 0x59));
  QStringList categories;
  double top = 0;
  for (const auto& it : m_run->analysis.iterations) {
    if (it.rank != rank) continue;
    *compute << it.compute_ms;
    *hidden << it.comm_ms - it.exposed_comm_ms;
    *exposed << it.exposed_comm_ms;
    categories << QString::number(it.iteration);
    top = std::max(top, it.compute_ms + it.comm_ms);
  }
  auto* series = new QStackedBarSeries;
  series->append(compute);
  series->append(hidden);
  series->append(exposed);
  series->setBarWidth(0.9);
  auto* chart = new QChart;
  chart->addSeries(series);
  chart->setTitle(tr("Rank %1: compute and communication per iteration").arg(rank));
  auto* x = new QBarCategoryAxis;
  x->append(categories);
  x->setLabelsVisible(categories.size() <= 40);
  x->setTitleText(tr("iteration"));
  auto* y = new QValueAxis;
  y->setRange(0, top * 1.05);
  y->setTitleText(tr("ms"));
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  chart->legend()->setAlignment(Qt::AlignBottom);
  QChart* old = m_overlapChart->chart();
  m_overlapChart->setChart(chart);
  delete old;
}

void MainWindow::updateBuckets() {
  if (!m_run) return;
  m_buckets->setRun(m_run.get(), m_bucketRank->currentData().toInt(), m_bucketIteration->value());
}

void MainWindow::exportChromeTrace() {
  if (!m_run) return;
  const QString out = QFileDialog::getSaveFileName(this, tr("Export Chrome trace"),
                                                   QString::fromStdString(m_run->path) + ".json",
                                                   tr("Trace (*.json)"));
  if (out.isEmpty()) return;
  try {
    probes::RunStoreReader reader(m_run->path);
    const int64_t n = probes::export_chrome_trace(reader, out.toStdString());
    statusBar()->showMessage(tr("Wrote %1 trace events to %2").arg(n).arg(out));
  } catch (const std::exception& e) {
    emit loadFailed(tr("Export failed: %1").arg(QString::fromUtf8(e.what())));
  }
}

}  // namespace ddpscope::gui
