#include "learn_page.h"

#include "lesson_kind.h"
#include "lesson_loader.h"

#include "lesson_file.h"
#include "ring_lesson.h"
#include "ring_view.h"
#include "user_message.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDoubleSpinBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QApplication>
#include <QClipboard>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScrollArea>
#include <QStackedWidget>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include "bucket_fill_view.h"
#include "ddp_lesson.h"
#include "graph_view.h"
#include "lesson_catalog.h"
#include "sequence_view.h"

namespace ddpscope::gui {
namespace {

// A lesson state drawn on its graph: counts, done, running and active nodes.
std::vector<GraphView::NodeMark> marks_of(const LessonState& s) {
  std::vector<GraphView::NodeMark> marks(s.counters.size());
  for (size_t i = 0; i < marks.size(); ++i) {
    marks[i].counter = s.counters[i];
    marks[i].executed = s.executed[i];
    marks[i].active = s.active[i];
    marks[i].running = static_cast<int>(i) == s.running;
  }
  return marks;
}

}  // namespace

LearnPage::LearnPage(const QString& workspace, const QString& cli, QWidget* parent)
    : QWidget(parent), m_workspace(workspace), m_cli(cli) {
  setFocusPolicy(Qt::StrongFocus);
  auto* layout = new QVBoxLayout(this);
  addLessonBars(layout);
  m_title = new QLabel;
  m_title->setStyleSheet(QStringLiteral("font-weight: bold"));
  // A lesson file's words are shown as written, never as rich text (a shared file must
  // not make the label fetch images or follow links).
  m_title->setTextFormat(Qt::PlainText);
  m_title->setWordWrap(true);
  m_about = new QLabel;
  m_about->setTextFormat(Qt::PlainText);
  m_about->setWordWrap(true);
  layout->addWidget(m_title);
  layout->addWidget(m_about);

  m_split = new QSplitter;
  m_split->addWidget(buildGraphs());
  m_split->addWidget(buildSidePanel());
  m_split->setStretchFactor(0, 1);
  m_split->setStretchFactor(1, 1);
  m_split->setChildrenCollapsible(false);
  layout->addWidget(m_split, 1);
  layout->addLayout(buildControls());
  connectSignals();
  updateScore();
}

void LearnPage::setClassBar(QWidget* bar) { static_cast<QVBoxLayout*>(layout())->insertWidget(0, bar); }

// Two rows, so the tab never makes the window wider than a laptop screen: the lesson
// and how to follow it, then what "Run live" re-records with.
void LearnPage::addLessonBars(QVBoxLayout* layout) {
  auto* bar = new QHBoxLayout;
  auto* params = new QHBoxLayout;
  m_lessonBox = new QComboBox;
  // Long titles are elided in the box, not allowed to set the page's minimum width.
  m_lessonBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_lessonBox->setMinimumContentsLength(28);
  for (size_t i = 0; i < lessons().size(); ++i)
    m_lessonBox->addItem(lessonMenuTitle(i));
  bar->addWidget(new QLabel(tr("Lesson")));
  bar->addWidget(m_lessonBox);
  m_workers = new QSpinBox;
  m_workers->setRange(2, 8);
  m_mode = new QComboBox;
  m_mode->addItems({QStringLiteral("fast"), QStringLiteral("smart")});
  m_live = new QPushButton(tr("Run live"));
  m_live->setToolTip(tr("Re-record this lesson's example with these workers and mode, then replay it"));
  m_live->setEnabled(!m_cli.isEmpty());
  m_bucketCap = new QDoubleSpinBox;
  m_bucketCap->setRange(0.05, 100);
  m_bucketCap->setDecimals(2);
  m_bucketCap->setSuffix(tr(" MiB"));
  m_bucketCap->setToolTip(tr("DDP lessons: bucket_cap_mb for Run live"));
  m_unused = new QCheckBox(tr("Unused layer on rank 1"));
  m_unused->setToolTip(tr("DDP lessons: rank 1's model skips a layer (train --inject-unused 1)"));
  m_findUnused = new QCheckBox(tr("find_unused_parameters"));
  m_findUnused->setToolTip(tr("DDP lessons: tell DDP that some parameters may get no gradient"));
  // Only what applies to the lesson is shown (showLesson): a distributed-autograd lesson
  // re-records with a mode, a DDP lesson with its buckets. Disabled fields beside them
  // made the row wider than a laptop's window.
  const auto labelled = [](const QString& text, QWidget* field) {
    auto* box = new QWidget;
    auto* row = new QHBoxLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(text));
    row->addWidget(field);
    return box;
  };
  params->addWidget(labelled(tr("Workers"), m_workers));
  m_modeField = labelled(tr("Mode"), m_mode);
  params->addWidget(m_modeField);
  m_bucketField = labelled(tr("Bucket cap"), m_bucketCap);
  params->addWidget(m_bucketField);
  params->addWidget(m_live);
  // A DDP lesson's options on their own row: beside the others they made the page wider
  // than a laptop's window leaves it.
  auto* ddpOptions = new QHBoxLayout;
  ddpOptions->addWidget(m_unused);
  ddpOptions->addWidget(m_findUnused);
  ddpOptions->addStretch();
  m_sideBySide = new QCheckBox(tr("Side by side"));
  m_sideBySide->setToolTip(tr("Lesson 2: step FAST and SMART on the same graph together"));
  bar->addWidget(m_sideBySide);
  bar->addStretch();
  m_predict = new QCheckBox(tr("Predict the next step"));
  m_predict->setToolTip(tr("Before each node runs, click the node you think runs next"));
  m_scoreLabel = new QLabel;
  bar->addWidget(m_predict);
  bar->addWidget(m_scoreLabel);
  params->addStretch();
  layout->addLayout(bar);
  layout->addLayout(params);
  layout->addLayout(ddpOptions);
}

// The lesson's graph, and below it the other mode's when shown side by side.
QWidget* LearnPage::buildGraphs() {
  m_graphs = new QSplitter(Qt::Vertical);
  m_graph = new GraphView;
  m_graph->setFocusPolicy(Qt::NoFocus);  // the arrows step the lesson, not scroll the graph
  m_graphs->addWidget(m_graph);
  m_comparePane = new QWidget;
  auto* compareLayout = new QVBoxLayout(m_comparePane);
  compareLayout->setContentsMargins(0, 0, 0, 0);
  m_compareExplanation = new QLabel;
  m_compareExplanation->setWordWrap(true);
  m_compareGraph = new GraphView;
  m_compareGraph->setFocusPolicy(Qt::NoFocus);
  compareLayout->addWidget(m_compareExplanation);
  compareLayout->addWidget(m_compareGraph, 1);
  m_graphs->addWidget(m_comparePane);
  m_comparePane->hide();
  // A ring lesson draws its ranks and blocks in place of a graph.
  m_ring = new RingView;
  m_graphStack = new QStackedWidget;
  m_graphStack->addWidget(m_graphs);
  m_graphStack->addWidget(m_ring);
  return m_graphStack;
}

// The step's words, its messages, a DDP lesson's buckets, and the lists of what is in flight.
QWidget* LearnPage::buildSidePanel() {
  auto* side = new QWidget;
  auto* sideLayout = new QVBoxLayout(side);
  m_stepLabel = new QLabel;
  m_explanation = new QLabel;
  m_explanation->setTextFormat(Qt::PlainText);
  m_explanation->setWordWrap(true);
  m_explanation->setMinimumHeight(60);
  m_explanation->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  QFont big = m_explanation->font();
  big.setPointSizeF(big.pointSizeF() * 1.25);
  m_explanation->setFont(big);
  m_inFlight = new QListWidget;
  m_inFlight->setFocusPolicy(Qt::NoFocus);
  m_gradients = new QListWidget;
  m_gradients->setFocusPolicy(Qt::NoFocus);
  // Predict mode's verdict on the last click, on the page where the student looks (it was
  // only in the status bar).
  m_feedback = new QLabel;
  m_feedback->setWordWrap(true);
  m_feedback->hide();
  sideLayout->addWidget(m_stepLabel);
  sideLayout->addWidget(m_feedback);
  sideLayout->addWidget(m_explanation);
  m_sequence = new SequenceView;
  m_sequence->setFocusPolicy(Qt::NoFocus);
  m_sequence->setMinimumHeight(110);
  sideLayout->addWidget(m_sequence, 2);
  m_buckets = new BucketFillView;
  sideLayout->addWidget(m_buckets, 2);
  m_inFlightTitle = new QLabel(tr("Messages in flight"));
  m_gradientsTitle = new QLabel(tr("Gradients in the context"));
  sideLayout->addWidget(m_inFlightTitle);
  sideLayout->addWidget(m_inFlight, 1);
  sideLayout->addWidget(m_gradientsTitle);
  sideLayout->addWidget(m_gradients, 1);
  // A ring lesson: what each rank has sent so far, against the tensor's size; below it
  // the room the hidden lists would take.
  m_ringTally = new QLabel;
  m_ringTally->setWordWrap(true);
  m_ringTally->setTextFormat(Qt::PlainText);
  sideLayout->addWidget(m_ringTally);
  m_ringFiller = new QWidget;
  sideLayout->addWidget(m_ringFiller, 10);
  side->setMinimumWidth(300);
  // Scrolled when the window is short (a laptop's 700 px): the step's words, timeline and
  // lists keep their heights instead of setting the page's.
  auto* scroll = new QScrollArea;
  scroll->setWidget(side);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(320);
  return scroll;
}

QHBoxLayout* LearnPage::buildControls() {
  auto* controls = new QHBoxLayout;
  auto button = [&](const QString& text, const QString& tip, auto slot) {
    auto* b = new QPushButton(text);
    b->setToolTip(tip);
    b->setFocusPolicy(Qt::NoFocus);
    connect(b, &QPushButton::clicked, this, slot);
    controls->addWidget(b);
    return b;
  };
  button(tr("|<"), tr("To the start (Home)"), [this] { toStart(); });
  button(tr("<"), tr("One step back (Left)"), [this] { stepBack(); });
  m_play = button(tr("Play"), tr("Play or pause (Space)"), [this] { setPlaying(!isPlaying()); });
  button(tr(">"), tr("One step forward (Right)"), [this] { stepForward(); });
  button(tr(">|"), tr("To the end (End)"), [this] { toEnd(); });
  controls->addSpacing(16);
  controls->addWidget(new QLabel(tr("Speed")));
  m_speed = new QSlider(Qt::Horizontal);
  m_speed->setRange(1, 20);  // half-steps per second
  m_speed->setValue(4);
  m_speed->setFocusPolicy(Qt::NoFocus);
  controls->addWidget(m_speed);
  controls->addStretch();
  // A link to this step (lesson_link.h), for a chat or the course page: it opens the same
  // lesson, step and view in another ddpscope.
  auto* link = new QPushButton(tr("Copy link"));
  link->setToolTip(tr("Copy a link to this step (Ctrl+Shift+C); ddpscope opens it at the same step and view"));
  link->setFocusPolicy(Qt::NoFocus);
  connect(link, &QPushButton::clicked, this, [this] { copyLinkToStep(); });
  controls->addWidget(link);
  return controls;
}

void LearnPage::connectSignals() {
  m_timer = new QTimer(this);
  connect(m_timer, &QTimer::timeout, this, [this] {
    if (m_applied >= m_lesson.steps.size() || m_asking) {
      setPlaying(false);
      return;
    }
    stepForward();
  });
  connect(m_speed, &QSlider::valueChanged, this, [this](int v) { setStepsPerSecond(v / 2.0); });
  setStepsPerSecond(m_speed->value() / 2.0);
  connect(m_graph, &GraphView::nodeIndexClicked, this, &LearnPage::onNodeClicked);
  connect(m_ring, &RingView::cellClicked, this, &LearnPage::onRingCellClicked);
  connect(m_sideBySide, &QCheckBox::toggled, this, [this](bool on) {
    m_comparePane->setVisible(on);
    if (on) {
      const int half = std::max(200, m_graphs->height() / 2);
      m_graphs->setSizes({half, half});  // the two runs get the same room
    }
    if (on) showCompare();
  });
  connect(m_predict, &QCheckBox::toggled, this, [this](bool on) {
    if (!on) m_asking = false;
    showState();
  });
  connect(m_sideBySide, &QCheckBox::toggled, this, &LearnPage::stepShown);
  connect(m_lessonBox, &QComboBox::activated, this, [this](int index) {
    if (index >= static_cast<int>(lessons().size())) return;  // the file or run shown: already open
    QString error;
    if (!openLesson(index, &error)) emit statusMessage(error);
  });
  connect(m_live, &QPushButton::clicked, this, [this] {
    QString error;
    if (!runLive(&error)) emit statusMessage(error);
  });
}

void LearnPage::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  // First shown: the graph gets a little more than half the width (the step's panel had
  // asked for most of it, leaving the graph a strip), unless the user's own split was
  // restored.
  if (!m_splitPlaced) {
    m_splitPlaced = true;
    if (!m_split->property("restored").toBool()) {
      const int graph = m_split->width() * 56 / 100;
      m_split->setSizes({graph, m_split->width() - graph});
    }
  }
  if (!m_lesson.steps.empty() || isRunningLive() || m_openedOnShow) return;
  m_openedOnShow = true;  // once: a lesson that cannot load says so once, not on every visit
  QString error;
  if (!openLesson(std::max(0, m_lessonBox->currentIndex()), &error)) emit statusMessage(error);
}

LearnPage::~LearnPage() {
  if (m_process && m_process->state() != QProcess::NotRunning) {
    m_process->kill();
    m_process->waitForFinished(3000);
  }
}

bool LearnPage::openLesson(int index, QString* error) {
  if (index < 0 || index >= static_cast<int>(lessons().size())) {
    *error = tr("There is no lesson %1").arg(index + 1);
    return false;
  }
  const LessonInfo& info = lessons()[static_cast<size_t>(index)];
  const QString dir = lessonsDir();
  if (dir.isEmpty()) {
    *error =
        tr("The lessons' recorded runs were not found (resources/lessons, or share/ddpscope/lessons "
           "next to the app); set DDPSCOPE_LESSONS_DIR, or use Run live");
    return false;
  }
  m_lessonBox->setCurrentIndex(index);
  m_workers->setValue(info.workers);
  m_mode->setCurrentText(info.ddp ? QStringLiteral("fast") : info.mode);
  m_bucketCap->setValue(info.bucket_cap_mb);
  m_unused->setChecked(info.unused_parameter);
  m_findUnused->setChecked(false);
  // Lesson 2's two recordings, stepped together when "Side by side" is ticked.
  m_compare = Lesson();
  m_sideBySide->setEnabled(!info.compare_file.isEmpty());
  if (!info.compare_file.isEmpty()) {
    try {
      probes::RunStoreReader other(QDir(dir).filePath(info.compare_file).toStdString());
      const auto graphs = list_dist_graphs(other);
      if (!graphs.empty()) m_compare = load_lesson(other, graphs.front().ctx_id, graphs.front().pass);
    } catch (const std::exception& e) {
      emit statusMessage(tr("Side by side is not available: %1").arg(userMessage(e)));
    }
    m_compareGraph->setGraph(m_compare.graph, 1 << 30);
  }
  if (info.compare_file.isEmpty()) m_sideBySide->setChecked(false);
  m_aboutTemplate = info.about;
  if (!load(QDir(dir).filePath(info.file), info.ddp ? QStringLiteral("ddp") : QString(), info.rank, error))
    return false;
  m_source.source = LessonLink::Source::Builtin;
  m_source.lesson = index;
  m_source.path.clear();
  m_catalogIndex = index;
  showSourceInBox(QString());
  // load() showed step 0 while the source still read "a run": say it again as the
  // lesson, or a class would be sent the run's path (a student saw "A run of your own").
  emit stepShown();
  return true;
}

bool LearnPage::openLessonFile(const QString& path, QString* error) {
  probes::LessonFile file;
  QString run;
  try {
    file = probes::read_lesson_file(path.toStdString());
    run = QString::fromStdString(probes::lesson_run_path(path.toStdString(), file));
  } catch (const std::exception& e) {
    *error = userMessage(e);
    return false;
  }
  if (!QFileInfo::exists(run)) {
    *error = tr("The lesson %1 replays %2, which is not there: keep the run file beside the lesson file (as "
                "ddpscope-cli lesson make wrote them), or make the lesson again")
                 .arg(QFileInfo(path).fileName(), run);
    return false;
  }
  m_aboutTemplate = QString::fromStdString(file.about);
  // The kind the file names, else the first the run holds (lesson_kind.h).
  if (!load(run, QString::fromStdString(file.kind), file.rank, error)) return false;
  m_source.source = LessonLink::Source::File;
  m_source.path = QFileInfo(path).absoluteFilePath();
  m_stops = file.stops;
  for (const auto& [step, text] : file.narration)
    m_narration[step] = QString::fromStdString(text);
  const QString title = QString::fromStdString(file.title);
  m_title->setText(tr("%1 · %2 steps · %3").arg(title).arg(m_lesson.steps.size()).arg(QFileInfo(path).fileName()));
  showSourceInBox(title);
  // Stops and narration past the end are said, not silently dropped.
  const size_t steps = m_lesson.steps.size();
  const long beyond =
      std::count_if(m_stops.begin(), m_stops.end(), [&](int s) { return static_cast<size_t>(s) > steps; }) +
      std::count_if(m_narration.begin(), m_narration.end(),
                    [&](const auto& n) { return static_cast<size_t>(n.first) > steps; });
  if (beyond > 0)
    emit statusMessage(tr("%1: %2 stop(s) or narrated step(s) lie past the lesson's %3 steps and are not used")
                           .arg(QFileInfo(path).fileName())
                           .arg(beyond)
                           .arg(steps));
  showState();
  return true;
}

// The lesson box names the lesson shown: a file's or a run's title as an extra last item,
// removed when a lesson of the menu is opened again.
void LearnPage::showSourceInBox(const QString& title) {
  // Run live re-records a lesson of the menu (a live recording of one included); a file
  // or run of the user's own has no example to run again, nor a twin to show beside it.
  m_live->setEnabled(!m_cli.isEmpty() && m_catalogIndex >= 0 && !isRunningLive());
  if (m_source.source != LessonLink::Source::Builtin && m_catalogIndex < 0) {
    m_sideBySide->setChecked(false);
    m_sideBySide->setEnabled(false);
    m_compare = Lesson();
  }
  const QSignalBlocker block(m_lessonBox);
  while (m_lessonBox->count() > static_cast<int>(lessons().size()))
    m_lessonBox->removeItem(m_lessonBox->count() - 1);
  if (m_source.source == LessonLink::Source::Builtin) {
    m_lessonBox->setCurrentIndex(m_source.lesson);
    return;
  }
  m_lessonBox->addItem(title.isEmpty() ? QFileInfo(m_source.path).fileName() : title);
  m_lessonBox->setCurrentIndex(m_lessonBox->count() - 1);
}

QString LearnPage::copyLinkToStep() {
  if (m_lesson.steps.empty()) {
    emit statusMessage(tr("Open a lesson first (the Learn menu): a link names a lesson and its step"));
    return QString();
  }
  const QString text = linkToStep().toString();
  QApplication::clipboard()->setText(text);
  emit statusMessage(tr("Copied: %1").arg(text));
  return text;
}

LessonLink LearnPage::linkToStep() const {
  LessonLink link = m_source;
  link.step = static_cast<int>(m_applied);
  link.sideBySide = m_sideBySide->isChecked();
  link.predict = m_predict->isChecked();
  link.zoom = m_graph->zoom();
  return link;
}

bool LearnPage::openLink(const LessonLink& link, QString* error) {
  bool opened = false;
  switch (link.source) {
    case LessonLink::Source::Builtin: opened = openLesson(link.lesson, error); break;
    case LessonLink::Source::File:
    case LessonLink::Source::Run:
      if (!QFileInfo::exists(link.path)) {
        *error = tr("This link opens %1, which is not on this machine: ask whoever sent it for the %2 (%3), then "
                    "open it here, or put it at that path")
                     .arg(link.path,
                          link.source == LessonLink::Source::File ? tr("lesson file and its run") : tr("run file"),
                          link.source == LessonLink::Source::File ? tr("Learn > Open a lesson file...")
                                                                  : tr("File > Open run"));
        return false;
      }
      opened = link.source == LessonLink::Source::File ? openLessonFile(link.path, error) : openRun(link.path, error);
      break;
  }
  if (!opened) return false;
  m_predict->setChecked(false);  // the steps are taken, not asked
  m_sideBySide->setChecked(link.sideBySide && m_sideBySide->isEnabled());
  m_applied = std::min(static_cast<size_t>(link.step), m_lesson.steps.size());
  m_predict->setChecked(link.predict);
  showState();
  if (link.zoom > 0) m_graph->setZoom(link.zoom);
  return true;
}

bool LearnPage::openRun(const QString& path, QString* error) {
  m_aboutTemplate =
      tr("A run of your own: its first distributed autograd context, or rank 0's first DDP "
         "iterations.");
  if (!load(path, QString(), 0, error)) return false;
  showSourceInBox(QString());
  return true;
}

// The lesson's words for the run loaded: a DDP lesson names the bucket cap the run was
// recorded with (a live re-recording at 0.25 MiB said "1 MiB buckets"), and says so when
// the cap cannot change the buckets: a parameter is never split, so one larger than the
// cap gets a bucket of its own whatever the cap.
QString LearnPage::aboutRun(probes::RunStoreReader& reader) const {
  QString text = m_aboutTemplate;
  if (!m_lesson.ddp) return text;
  const QJsonObject config = QJsonDocument::fromJson(QByteArray::fromStdString(reader.run().config_json)).object();
  const double cap = config.value(QStringLiteral("bucket_cap_mb")).toDouble(-1);
  if (cap <= 0) return text.replace(QStringLiteral("{cap} MiB buckets"), QStringLiteral("its buckets"));
  text.replace(QStringLiteral("{cap}"), QString::number(cap));
  const auto& bytes = m_lesson.layout.param_bytes;
  const int64_t largest = bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end());
  const int64_t capBytes = static_cast<int64_t>(cap * 1024 * 1024);
  int larger = 0;
  for (int64_t b : bytes)
    larger += b > capBytes ? 1 : 0;
  if (larger > 0) {
    text += tr(" This run's cap is %1 MiB: %2 of its parameters (the largest %3 MiB) are bigger, and a parameter "
               "is never split, so each of them has a bucket of its own at any cap this small.")
                .arg(cap)
                .arg(larger)
                .arg(static_cast<double>(largest) / (1024.0 * 1024.0), 0, 'f', 2);
  }
  return text;
}

bool LearnPage::load(const QString& path, const QString& kind, int rank, QString* error) {
  try {
    probes::RunStoreReader reader(path.toStdString());
    std::string why_none;
    Lesson lesson = load_run_lesson(reader, kind.toStdString(), rank, why_none);
    if (lesson.steps.empty()) {
      *error = QString::fromStdString(why_none);
      return false;
    }
    m_lesson = std::move(lesson);
    m_about->setText(aboutRun(reader));
    // A run replayed as it is (a lesson of the menu or a file says otherwise after this).
    m_source = LessonLink{};
    m_source.source = LessonLink::Source::Run;
    m_source.path = QFileInfo(path).absoluteFilePath();
    m_stops.clear();
    m_narration.clear();
    m_catalogIndex = -1;  // openLesson sets it back
  } catch (const std::exception& e) {
    *error = tr("Cannot open %1: %2").arg(path, userMessage(e));
    return false;
  }
  setPlaying(false);
  m_applied = 0;
  m_asking = false;
  m_score = m_predictions = 0;
  if (m_lesson.ring) {
    m_title->setText(tr("allreduce #%1 around a ring of %2 ranks · %3 steps · %4")
                         .arg(m_lesson.pass)
                         .arg(m_lesson.ring_ranks)
                         .arg(m_lesson.steps.size())
                         .arg(QFileInfo(path).fileName()));
  } else if (m_lesson.ddp) {
    m_title->setText(tr("rank %1 · its first iterations · %2 steps · %3")
                         .arg(m_lesson.rank)
                         .arg(m_lesson.steps.size())
                         .arg(QFileInfo(path).fileName()));
  } else {
    m_title->setText(tr("context %1 · pass %2 · %3 steps · %4")
                         .arg(QString::fromStdString(format_global_id(m_lesson.ctx_id)),
                              QString::fromStdString(format_global_id(m_lesson.pass)))
                         .arg(m_lesson.steps.size())
                         .arg(QFileInfo(path).fileName()));
  }
  // A distributed lesson shows its messages and context; a DDP lesson its buckets; a ring
  // lesson its ranks' blocks, and the words.
  for (QWidget* w :
       std::initializer_list<QWidget*>{m_sequence, m_inFlight, m_inFlightTitle, m_gradients, m_gradientsTitle})
    w->setVisible(!m_lesson.ddp && !m_lesson.ring);
  m_buckets->setVisible(m_lesson.ddp);
  m_ringTally->setVisible(m_lesson.ring);
  m_ringFiller->setVisible(m_lesson.ring);
  m_graphStack->setCurrentWidget(m_lesson.ring ? static_cast<QWidget*>(m_ring) : m_graphs);
  m_modeField->setVisible(!m_lesson.ddp && !m_lesson.ring);
  for (QWidget* w : std::initializer_list<QWidget*>{m_bucketField, m_unused, m_findUnused})
    w->setVisible(m_lesson.ddp);
  m_graph->setGraph(m_lesson.graph, 1 << 30);  // never collapsed: every node is a step
  m_sequence->setData(std::make_shared<const SequenceData>(lesson_sequence(m_lesson, 0)));
  updateScore();
  showState();
  emit lessonLoaded();
  return true;
}

bool LearnPage::isRunningLive() const { return m_process && m_process->state() != QProcess::NotRunning; }

bool LearnPage::runLive(QString* error) {
  if (m_catalogIndex < 0) {
    *error = tr("Run live re-records a lesson of the Learn menu: open one there first");
    return false;
  }
  if (m_cli.isEmpty()) {
    *error = tr("ddpscope-cli was not found next to the app or on PATH; set DDPSCOPE_CLI");
    return false;
  }
  if (isRunningLive()) {
    *error = tr("A live run of this lesson is still going");
    return false;
  }
  const LessonInfo& info = lessons()[static_cast<size_t>(m_catalogIndex)];
  QDir().mkpath(m_workspace);
  LiveParameters params;
  params.workers = m_workers->value();
  params.mode = m_mode->currentText();
  params.bucket_cap_mb = m_bucketCap->value();
  params.unused_parameter = m_unused->isChecked();
  params.find_unused_parameters = m_findUnused->isChecked();
  QString variant = info.ddp ? QStringLiteral("cap%1").arg(params.bucket_cap_mb) : params.mode;
  if (info.ddp && params.unused_parameter) variant += QStringLiteral("-unused");
  if (info.ddp && params.find_unused_parameters) variant += QStringLiteral("-find");
  const QString out = QDir(m_workspace)
                          .filePath(QStringLiteral("lesson-%1-%2-np%3-%4.ddprun")
                                        .arg(info.example, variant)
                                        .arg(m_workers->value())
                                        .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss"))));
  delete m_process;
  m_process = new QProcess(this);
  m_process->setProcessChannelMode(QProcess::MergedChannels);
  connect(m_process, &QProcess::finished, this, [this, out](int code, QProcess::ExitStatus) {
    const QString log = QString::fromUtf8(m_process->readAll()).trimmed();
    m_live->setEnabled(true);
    QString error;
    // A FAST lesson on an unused RPC fails by design: its run still replays.
    const LessonInfo& lesson = lessons()[static_cast<size_t>(std::max(0, m_catalogIndex))];
    const int catalog = m_catalogIndex;  // a live recording of it: Run live again re-records the same lesson
    if (QFileInfo::exists(out) && load(out, lesson.ddp ? QStringLiteral("ddp") : QString(), lesson.rank, &error)) {
      m_catalogIndex = catalog;
      showSourceInBox(tr("%1 (live: %2)").arg(lesson.title, QFileInfo(out).fileName()));
      emit statusMessage(
          code == 0 ? tr("Recorded %1").arg(QFileInfo(out).fileName())
                    : tr("Recorded %1; the example failed: %2").arg(QFileInfo(out).fileName(), log.section('\n', -1)));
    } else {
      emit statusMessage(tr("The live run failed: %1").arg(error.isEmpty() ? log.section('\n', -1) : error));
    }
  });
  m_live->setEnabled(false);
  emit statusMessage(tr("Recording %1 on %2 workers (%3)...").arg(info.example).arg(m_workers->value()).arg(variant));
  m_process->start(m_cli, liveArguments(info, params, out));
  return true;
}

void LearnPage::stepForward() {
  if (m_applied >= m_lesson.steps.size()) return;
  if (m_predict->isChecked() && kind_of(m_lesson).asks_before(m_lesson.steps[m_applied]) && !m_asking) {
    m_asking = true;
    m_guessed_wrong = false;
    showFeedback(QString(), true);  // a new question
    setPlaying(false);
    showState();
    return;
  }
  if (m_asking) return;  // answer first (or untick Predict)
  ++m_applied;
  showState();
  // A lesson file's stops: Play halts there for the teacher to talk.
  if (isPlaying() && std::binary_search(m_stops.begin(), m_stops.end(), static_cast<int>(m_applied))) {
    setPlaying(false);
    emit statusMessage(tr("Step %1: a stop of this lesson. Space plays on.").arg(m_applied));
  }
}

void LearnPage::stepBack() {
  m_asking = false;
  showFeedback(QString(), true);
  if (m_applied > 0) --m_applied;
  showState();
}

void LearnPage::toStart() {
  m_asking = false;
  setPlaying(false);
  m_applied = 0;
  showState();
}

void LearnPage::toEnd() {
  m_asking = false;
  setPlaying(false);
  m_applied = m_lesson.steps.size();
  showState();
}

void LearnPage::setPlaying(bool playing) {
  if (playing && m_applied >= m_lesson.steps.size()) m_applied = 0;  // play again from the start
  if (playing) {
    m_timer->start();
  } else {
    m_timer->stop();
  }
  m_play->setText(playing ? tr("Pause") : tr("Play"));
}

bool LearnPage::isPlaying() const { return m_timer->isActive(); }

void LearnPage::setStepsPerSecond(double rate) { m_timer->setInterval(static_cast<int>(1000 / std::max(rate, 0.1))); }

// Predict mode in a ring lesson: the block the asked rank sends next.
void LearnPage::onRingCellClicked(int rank, int block) {
  if (!m_asking || !m_lesson.ring) return;
  if (!m_guessed_wrong) emit answered(tr("rank %1, block %2").arg(rank).arg(block));
  const LessonStep& next = m_lesson.steps[m_applied];
  if (rank == next.rank && block == next.param) {
    acceptAnswer(tr("Right: rank %1 sends block %2.").arg(rank).arg(block));
    return;
  }
  missAnswer();
  const int n = m_lesson.ring_ranks;
  const QString why = rank != next.rank ? tr("the question is about rank %1's row").arg(next.rank)
                      : next.iteration == 0
                          ? tr("in its first step a rank sends the block with its own number")
                          : tr("a rank sends the block it received (and %1) in its previous step")
                                .arg(next.iteration < n ? tr("added its own values to") : tr("took as the full sum"));
  const QString text = tr("Not block %1: %2. Try again.").arg(block).arg(why);
  showFeedback(text, false);
  emit statusMessage(text);
}

void LearnPage::onNodeClicked(int node) {
  if (!m_asking) return;
  const LessonStep& next = m_lesson.steps[m_applied];
  const LessonState s = state();
  const GraphNode& clicked = m_lesson.graph.nodes[static_cast<size_t>(node)];
  if (!m_guessed_wrong) emit answered(tr("%1 on worker %2").arg(QString::fromStdString(clicked.op)).arg(clicked.rank));
  if (node == next.node) {
    acceptAnswer(tr("Right: %1 runs next.").arg(QString::fromStdString(clicked.op)));
    return;
  }
  missAnswer();
  QString why;
  if (s.executed[static_cast<size_t>(node)]) {
    why = tr("it has already run");
  } else if (s.counters[static_cast<size_t>(node)] > 0) {
    why = tr("its count is %1: it still waits for gradients").arg(s.counters[static_cast<size_t>(node)]);
  } else {
    why = tr("it is ready, but another node gets there first");
  }
  const QString text =
      tr("Not %1 on worker %2: %3. Try again.").arg(QString::fromStdString(clicked.op)).arg(clicked.rank).arg(why);
  showFeedback(text, false);
  emit statusMessage(text);
}

// The right answer: scored unless a wrong guess already counted the question as missed;
// the step is taken.
void LearnPage::acceptAnswer(const QString& right) {
  if (!m_guessed_wrong) {
    ++m_score;
    ++m_predictions;
  }
  const QString text = m_guessed_wrong ? tr("Yes, that one.") : right;
  m_asking = false;
  ++m_applied;
  updateScore();
  showState();
  showFeedback(text, true);
  emit statusMessage(text);
}

// A wrong answer: a question counts once, missed at its first wrong guess.
void LearnPage::missAnswer() {
  if (!m_guessed_wrong) ++m_predictions;
  m_guessed_wrong = true;
  updateScore();
}

void LearnPage::showFeedback(const QString& text, bool right) {
  m_feedback->setText(text);
  m_feedback->setStyleSheet(right ? QStringLiteral("color: #1b7a2e; font-weight: bold")
                                  : QStringLiteral("color: #b3261e; font-weight: bold"));
  m_feedback->setVisible(!text.isEmpty());
}

void LearnPage::updateScore() {
  m_scoreLabel->setText(
      m_predict->isChecked() || m_predictions > 0 ? tr("Score %1 of %2").arg(m_score).arg(m_predictions) : QString());
}

void LearnPage::showState() {
  const LessonState s = state();
  std::vector<GraphView::NodeMark> marks = marks_of(s);
  // The node the last step was about (a count falling, a function recorded).
  if (m_applied > 0) {
    const LessonStep& last = m_lesson.steps[m_applied - 1];
    if (last.node >= 0 && last.kind != StepKind::NodeRuns) marks[static_cast<size_t>(last.node)].highlight = true;
  }
  m_graph->setMarks(marks);
  if (m_lesson.ring) {
    m_ring->setState(s, m_lesson.ring_ranks, m_applied > 0 ? &m_lesson.steps[m_applied - 1] : nullptr);
    QStringList sent;
    for (size_t r = 0; r < s.ring_bytes_sent.size(); ++r)
      sent << tr("rank %1: sent %2 step(s), %3 B").arg(r).arg(s.ring_steps_done[r]).arg(s.ring_bytes_sent[r]);
    const int n = m_lesson.ring_ranks;
    m_ringTally->setText(tr("Sent so far (the tensor is %1 B on every rank):\n%2\nAt the end each rank has sent "
                            "2(n-1)/n = %3 times the tensor.")
                             .arg(m_lesson.ring_tensor_bytes)
                             .arg(sent.join(QLatin1Char('\n')))
                             .arg(n > 0 ? 2.0 * (n - 1) / n : 0.0, 0, 'f', 2));
  }
  m_buckets->setBuckets(s.buckets, s.generation);
  showCompare();
  m_sequence->updateData(std::make_shared<const SequenceData>(lesson_sequence(m_lesson, m_applied)));
  m_sequence->setNow(m_applied > 0            ? m_lesson.steps[m_applied - 1].t_ns
                     : m_lesson.steps.empty() ? -1
                                              : m_lesson.steps.front().t_ns);
  m_stepLabel->setText(tr("Step %1 of %2").arg(m_applied).arg(m_lesson.steps.size()));
  if (m_asking && m_lesson.ring) {
    m_explanation->setText(
        tr("Which block does rank %1 send next? Click it in rank %1's row.").arg(m_lesson.steps[m_applied].rank));
  } else if (m_asking) {
    m_explanation->setText(tr("Which node runs next? Click it in the graph."));
  } else if (m_applied == 0) {
    m_explanation->setText(tr("Press Space to play, or Right to take one step."));
  } else {
    const auto narrated = m_narration.find(static_cast<int>(m_applied));
    m_explanation->setText(narrated != m_narration.end() ? narrated->second
                                                         : QString::fromStdString(m_lesson.explain(m_applied - 1)));
  }
  m_inFlight->clear();
  for (size_t k : s.in_flight) {
    const LessonStep& m = m_lesson.steps[k];
    m_inFlight->addItem(tr("%1 from worker %2 to worker %3: '%4', %5 B")
                            .arg(QString::fromStdString(format_global_id(m.msg_id)))
                            .arg(m.rank)
                            .arg(m.peer)
                            .arg(QString::fromStdString(m.name == "_ddpscope.dist_backward" ? "gradients" : m.name))
                            .arg(m.bytes));
  }
  m_gradients->clear();
  for (int n : s.accumulated) {
    const GraphNode& g = m_lesson.graph.nodes[static_cast<size_t>(n)];
    m_gradients->addItem(tr("worker %1: %2").arg(g.rank).arg(QString::fromStdString(g.op)));
  }
  for (int worker : s.released)
    m_gradients->addItem(tr("worker %1: context released, its gradients freed").arg(worker));
  updateScore();
  emit stepShown();
}

void LearnPage::showCompare() {
  if (!m_sideBySide->isChecked() || m_compare.steps.empty()) return;
  // Step k of each: the two runs share their forward, then part ways.
  const size_t k = std::min(m_applied, m_compare.steps.size());
  const LessonState s = m_compare.state_after(k);
  const std::vector<GraphView::NodeMark> marks = marks_of(s);
  m_compareGraph->setMarks(marks);
  m_compareExplanation->setText(
      tr("<b>Side by side</b> (step %1 of %2): %3")
          .arg(k)
          .arg(m_compare.steps.size())
          .arg(k == 0 ? tr("not started") : QString::fromStdString(m_compare.explain(k - 1)).toHtmlEscaped()));
}

void LearnPage::keyPressEvent(QKeyEvent* event) {
  switch (event->key()) {
    case Qt::Key_Space: setPlaying(!isPlaying()); break;
    case Qt::Key_Right: stepForward(); break;
    case Qt::Key_Left: stepBack(); break;
    case Qt::Key_Home: toStart(); break;
    case Qt::Key_End: toEnd(); break;
    default: QWidget::keyPressEvent(event);
  }
}

}  // namespace ddpscope::gui
