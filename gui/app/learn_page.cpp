#include "learn_page.h"

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <cstring>

#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "graph_view.h"
#include "lesson_catalog.h"
#include "lesson_file.h"
#include "lesson_kind.h"
#include "lesson_live_recorder.h"
#include "lesson_loader.h"
#include "lesson_view.h"
#include "ring_lesson_view.h"
#include "user_message.h"

namespace ddpscope::gui {
LearnPage::LearnPage(const QString& workspace, const QString& cli, QWidget* parent)
    : QWidget(parent), m_recorder(new LessonLiveRecorder(workspace, cli, this)) {
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
  m_stages = new QStackedWidget;
  m_split->addWidget(m_stages);
  m_split->addWidget(buildSidePanel());
  m_split->setStretchFactor(0, 1);
  m_split->setStretchFactor(1, 1);
  m_split->setChildrenCollapsible(false);
  layout->addWidget(m_split, 1);
  layout->addLayout(buildControls());
  addViews();
  connectSignals();
  updateScore();
}

void LearnPage::setClassBar(QWidget* bar) { static_cast<QVBoxLayout*>(layout())->insertWidget(0, bar); }

// Two rows, so the tab never makes the window wider than a laptop screen: the lesson
// and how to follow it, then what "Run live" re-records with (Workers, and the options of
// the view shown: addViews).
void LearnPage::addLessonBars(QVBoxLayout* layout) {
  auto* bar = new QHBoxLayout;
  m_lessonBox = new QComboBox;
  // Long titles are elided in the box, not allowed to set the page's minimum width.
  m_lessonBox->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  m_lessonBox->setMinimumContentsLength(28);
  for (size_t i = 0; i < lessons().size(); ++i)
    m_lessonBox->addItem(lessonMenuTitle(i));
  bar->addWidget(new QLabel(tr("Lesson")));
  bar->addWidget(m_lessonBox);
  m_sideBySide = new QCheckBox(tr("Side by side"));
  m_sideBySide->setToolTip(tr("Lesson 2: step FAST and SMART on the same graph together"));
  bar->addWidget(m_sideBySide);
  bar->addStretch();
  m_predict = new QCheckBox(tr("Predict the next step"));
  m_predict->setToolTip(tr("Before each node runs, click the node you think runs next"));
  m_scoreLabel = new QLabel;
  bar->addWidget(m_predict);
  bar->addWidget(m_scoreLabel);
  layout->addLayout(bar);

  m_optionsRow = new QHBoxLayout;
  m_workers = new QSpinBox;
  m_workers->setRange(2, 8);
  m_optionsRow->addWidget(new QLabel(tr("Workers")));
  m_optionsRow->addWidget(m_workers);
  m_live = new QPushButton(tr("Run live"));
  m_live->setToolTip(tr("Re-record this lesson's example with these workers and options, then replay it"));
  m_live->setEnabled(m_recorder->available());
  m_optionsRow->addWidget(m_live);
  m_optionsRow->addStretch();
  layout->addLayout(m_optionsRow);
}

// Each kind's view: its stage in the stack, its panel under the step's words and its
// options before Run live; only the lesson shown's are visible (showView).
void LearnPage::addViews() {
  m_views = makeLessonViews(this);
  for (LessonView* view : m_views) {
    m_stages->addWidget(view->stage());
    m_panels->addWidget(view->panel(), 10);
    if (QWidget* options = view->options()) m_optionsRow->insertWidget(m_optionsRow->indexOf(m_live), options);
    connect(view, &LessonView::answered, this, &LearnPage::onAnswer);
    if (auto* v = qobject_cast<AutogradLessonView*>(view)) m_autograd = v;
    if (auto* v = qobject_cast<BucketLessonView*>(view)) m_bucketLesson = v;
    if (auto* v = qobject_cast<RingLessonView*>(view)) m_ringLesson = v;
  }
  showView(m_autograd);
}

void LearnPage::showView(LessonView* shown) {
  m_view = shown;
  m_stages->setCurrentWidget(shown->stage());
  for (LessonView* view : m_views) {
    view->panel()->setVisible(view == shown);
    if (view->options()) view->options()->setVisible(view == shown);
  }
}

GraphView* LearnPage::graph() const { return m_view && m_view->graph() ? m_view->graph() : m_autograd->graph(); }

// The step's words, then the view's panel (added by addViews), scrolled when short.
QWidget* LearnPage::buildSidePanel() {
  auto* side = new QWidget;
  m_panels = new QVBoxLayout(side);
  m_stepLabel = new QLabel;
  m_explanation = new QLabel;
  m_explanation->setTextFormat(Qt::PlainText);
  m_explanation->setWordWrap(true);
  m_explanation->setMinimumHeight(60);
  m_explanation->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  QFont big = m_explanation->font();
  big.setPointSizeF(big.pointSizeF() * 1.25);
  m_explanation->setFont(big);
  // Predict mode's verdict on the last click, on the page where the student looks (it was
  // only in the status bar).
  m_feedback = new QLabel;
  m_feedback->setWordWrap(true);
  m_feedback->hide();
  m_panels->addWidget(m_stepLabel);
  m_panels->addWidget(m_feedback);
  m_panels->addWidget(m_explanation);
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
  connect(m_sideBySide, &QCheckBox::toggled, m_autograd, &AutogradLessonView::setSideBySide);
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
  connect(m_recorder, &LessonLiveRecorder::started, this, &LearnPage::statusMessage);
  connect(m_recorder, &LessonLiveRecorder::finished, this, &LearnPage::liveRunFinished);
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

LearnPage::~LearnPage() = default;

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
  for (LessonView* view : m_views)
    view->setOptions(info);
  // Lesson 2's two recordings, stepped together when "Side by side" is ticked.
  m_autograd->clearCompared();
  m_sideBySide->setEnabled(!info.compare_file.isEmpty());
  QString why;
  if (!info.compare_file.isEmpty() && !m_autograd->loadCompared(QDir(dir).filePath(info.compare_file), &why))
    emit statusMessage(tr("Side by side is not available: %1").arg(why));
  if (info.compare_file.isEmpty()) m_sideBySide->setChecked(false);
  m_aboutTemplate = info.about;
  if (!load(QDir(dir).filePath(info.file), lessonKindName(info), info.rank, error)) return false;
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
  m_live->setEnabled(m_recorder->available() && m_catalogIndex >= 0 && !isRunningLive());
  if (m_source.source != LessonLink::Source::Builtin && m_catalogIndex < 0) {
    m_sideBySide->setChecked(false);
    m_sideBySide->setEnabled(false);
    m_autograd->clearCompared();
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
  link.zoom = m_view->graph() ? m_view->graph()->zoom() : 0;
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
  if (link.zoom > 0 && m_view->graph()) m_view->graph()->setZoom(link.zoom);
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

bool LearnPage::load(const QString& path, const QString& kind, int rank, QString* error) {
  try {
    probes::RunStoreReader reader(path.toStdString());
    std::string why_none;
    Lesson lesson = loadRunLesson(reader, kind.toStdString(), rank, why_none);
    if (lesson.steps.empty()) {
      *error = QString::fromStdString(why_none);
      return false;
    }
    m_lesson = std::move(lesson);
    showView(viewNamed(kindOf(m_lesson).view()));
    m_view->setLesson(m_lesson, reader);
    m_about->setText(m_view->about(m_aboutTemplate, m_lesson, reader));
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
  m_title->setText(
      tr("%1 · %2 steps · %3").arg(m_view->title(m_lesson)).arg(m_lesson.steps.size()).arg(QFileInfo(path).fileName()));
  updateScore();
  showState();
  emit lessonLoaded();
  return true;
}

bool LearnPage::isRunningLive() const { return m_recorder->isRecording(); }

bool LearnPage::runLive(QString* error) {
  if (m_catalogIndex < 0) {
    *error = tr("Run live re-records a lesson of the Learn menu: open one there first");
    return false;
  }
  LiveParameters params;
  params.workers = m_workers->value();
  for (const LessonView* view : m_views)
    view->readOptions(params);
  if (!m_recorder->start(lessons()[static_cast<size_t>(m_catalogIndex)], params, error)) return false;
  m_live->setEnabled(false);
  return true;
}

// A live recording ended: its run replays as the lesson it re-recorded (a FAST lesson on
// an unused RPC fails by design, and its run still replays).
void LearnPage::liveRunFinished(const QString& out, int code, const QString& lastLine) {
  m_live->setEnabled(true);
  QString error;
  const LessonInfo& lesson = lessons()[static_cast<size_t>(std::max(0, m_catalogIndex))];
  const int catalog = m_catalogIndex;  // a live recording of it: Run live again re-records the same lesson
  const QString name = QFileInfo(out).fileName();
  if (QFileInfo::exists(out) && load(out, lessonKindName(lesson), lesson.rank, &error)) {
    m_catalogIndex = catalog;
    showSourceInBox(tr("%1 (live: %2)").arg(lesson.title, name));
    emit statusMessage(code == 0 ? tr("Recorded %1").arg(name)
                                 : tr("Recorded %1; the example failed: %2").arg(name, lastLine));
  } else {
    emit statusMessage(tr("The live run failed: %1").arg(error.isEmpty() ? lastLine : error));
  }
}

void LearnPage::stepForward() {
  if (m_applied >= m_lesson.steps.size()) return;
  if (m_predict->isChecked() && kindOf(m_lesson).asksBefore(m_lesson.steps[m_applied]) && !m_asking) {
    m_asking = true;
    m_guessedWrong = false;
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

// Predict mode: the view judged the click. A question counts once: scored when its first
// answer is right, missed at its first wrong one; the step is taken when it is right.
void LearnPage::onAnswer(const LessonAnswer& answer) {
  if (!m_asking) return;
  if (!m_guessedWrong) {
    emit answered(answer.choice);
    ++m_predictions;
    if (answer.right) ++m_score;
  }
  if (!answer.right) {
    m_guessedWrong = true;
    updateScore();
    showFeedback(answer.verdict, false);
    emit statusMessage(answer.verdict);
    return;
  }
  const QString text = m_guessedWrong ? tr("Yes, that one.") : answer.verdict;
  m_asking = false;
  ++m_applied;
  updateScore();
  showState();
  showFeedback(text, true);
  emit statusMessage(text);
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
  m_view->showState(state(), m_applied, m_asking);
  m_stepLabel->setText(tr("Step %1 of %2").arg(m_applied).arg(m_lesson.steps.size()));
  if (m_asking) {
    m_explanation->setText(m_view->question(m_lesson.steps[m_applied]));
  } else if (m_applied == 0) {
    m_explanation->setText(tr("Press Space to play, or Right to take one step."));
  } else {
    const auto narrated = m_narration.find(static_cast<int>(m_applied));
    m_explanation->setText(narrated != m_narration.end() ? narrated->second
                                                         : QString::fromStdString(m_lesson.explain(m_applied - 1)));
  }
  updateScore();
  emit stepShown();
}

LessonView* LearnPage::viewNamed(const char* name) const {
  for (LessonView* view : m_views)
    if (std::strcmp(view->name(), name) == 0) return view;
  return m_autograd;  // a kind without a view of its own is drawn as a graph
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
