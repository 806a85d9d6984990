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
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <cstring>

#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "graph_view.h"
#include "lesson_catalog.h"
#include "lesson_kind.h"
#include "lesson_live_recorder.h"
#include "lesson_open_job.h"
#include "lesson_player.h"
#include "lesson_transport.h"
#include "lesson_view.h"
#include "ring_lesson_view.h"
#include "plural.h"

namespace ddpscope::gui {
LearnPage::LearnPage(const QString& workspace, const QString& cli, QWidget* parent)
    : QWidget(parent),
      m_recorder(new LessonLiveRecorder(workspace, cli, this)),
      m_opener(new LessonOpenJob(this)),
      m_loaded(std::make_shared<const LoadedLesson>()),
      m_player(new LessonPlayer(this)) {
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
  auto* transport = new LessonTransport(m_player);
  connect(transport, &LessonTransport::copyLinkClicked, this, [this] { copyLinkToStep(); });
  layout->addWidget(transport);
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
    connect(view, &LessonView::answered, m_player,
            [this](const LessonAnswer& a) { m_player->answer(a.choice, a.right, a.verdict); });
  }
  m_autograd = lessonView<AutogradLessonView>();
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

void LearnPage::connectSignals() {
  connect(m_player, &LessonPlayer::changed, this, &LearnPage::showState);
  connect(m_player, &LessonPlayer::answered, this, &LearnPage::answered);
  connect(m_player, &LessonPlayer::judged, this, [this](const QString& text, bool right) {
    showFeedback(text, right);
    if (!text.isEmpty()) emit statusMessage(text);
    updateScore();
  });
  connect(m_player, &LessonPlayer::stopReached, this,
          [this](int step) { emit statusMessage(tr("Step %1: a stop of this lesson. Space plays on.").arg(step)); });
  connect(m_sideBySide, &QCheckBox::toggled, m_autograd, &AutogradLessonView::setSideBySide);
  connect(m_predict, &QCheckBox::toggled, m_player, &LessonPlayer::setPredicting);
  connect(m_sideBySide, &QCheckBox::toggled, this, &LearnPage::stepShown);
  connect(m_lessonBox, &QComboBox::activated, this, [this](int index) {
    if (index >= static_cast<int>(lessons().size())) return;  // the file or run shown: already open
    openLessonInBackground(index);
  });
  connect(m_opener, &LessonOpenJob::opened, this, &LearnPage::showLoaded);
  connect(m_opener, &LessonOpenJob::failed, this,
          [this](const LessonRequest&, const QString& message) { onOpenFailed(message); });
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
  if (!m_loaded->lesson.steps.empty() || isRunningLive() || m_openedOnShow) return;
  m_openedOnShow = true;  // once: a lesson that cannot load says so once, not on every visit
  openLessonInBackground(std::max(0, m_lessonBox->currentIndex()));
}

LearnPage::~LearnPage() = default;

bool LearnPage::openLesson(int index, QString* error) { return openNow(requestMenuLesson(index, error), error); }

bool LearnPage::openLessonFile(const QString& path, QString* error) { return openNow(requestLessonFile(path), error); }

bool LearnPage::openRun(const QString& path, QString* error) { return openNow(requestRun(path), error); }

bool LearnPage::openLink(const LessonLink& link, QString* error) {
  if (!openNow(requestLink(link, error), error)) return false;
  showLinkState(link);
  return true;
}

bool LearnPage::openNow(const std::optional<LessonRequest>& request, QString* error) {
  if (!request) return false;
  m_opener->cancel();  // a lesson picked earlier, still being read, must not replace this one
  m_pendingLink.reset();
  std::optional<LoadedLesson> loaded = readLesson(*request, error);
  if (!loaded) return false;
  showLoaded(std::make_shared<const LoadedLesson>(std::move(*loaded)));
  return true;
}

void LearnPage::openInBackground(const std::optional<LessonRequest>& request, const QString& error) {
  if (!request) {
    emit statusMessage(error);
    return;
  }
  m_loading = request->source;
  emit statusMessage(tr("Loading %1...")
                         .arg(request->catalogIndex >= 0 && request->boxTitle.isEmpty()
                                  ? lessons()[static_cast<size_t>(request->catalogIndex)].title
                                  : QFileInfo(request->source.path).fileName()));
  m_opener->open(*request);
}

void LearnPage::openLessonInBackground(int index) {
  QString error;
  const auto request = requestMenuLesson(index, &error);
  openInBackground(request, error);
}

static bool sameSource(const LessonLink& a, const LessonLink& b) {
  return a.source == b.source && (a.source == LessonLink::Source::Builtin ? a.lesson == b.lesson : a.path == b.path);
}

void LearnPage::followLink(const LessonLink& link) {
  if (!m_loaded->lesson.steps.empty() && sameSource(link, m_loaded->request.source) && !m_opener->isBusy()) {
    m_pendingLink.reset();
    showLinkState(link);
    emit linkShown();
    return;
  }
  m_pendingLink = link;
  if (m_opener->isBusy() && sameSource(link, m_loading)) return;  // shown when that load ends
  QString error;
  const auto request = requestLink(link, &error);
  if (!request) {
    m_pendingLink.reset();
    emit linkFailed(error);
    return;
  }
  openInBackground(request, error);
}

void LearnPage::onOpenFailed(const QString& message) {
  if (!m_liveOutcome.isEmpty()) {
    m_liveOutcome.clear();
    emit statusMessage(tr("The live run failed: %1").arg(message));
    return;
  }
  if (m_pendingLink) {
    m_pendingLink.reset();
    emit linkFailed(message);
    return;
  }
  emit statusMessage(message);
}

// The step, side by side, predict mode and zoom a link names, in the lesson shown.
void LearnPage::showLinkState(const LessonLink& link) {
  m_predict->setChecked(false);  // the steps are taken, not asked
  m_sideBySide->setChecked(link.sideBySide && m_sideBySide->isEnabled());
  m_player->jumpTo(static_cast<size_t>(link.step));
  m_predict->setChecked(link.predict);
  if (link.zoom > 0 && m_view->graph()) m_view->graph()->setZoom(link.zoom);
}

// A lesson read (here or off the UI thread): its view, words, source and step 0.
void LearnPage::showLoaded(std::shared_ptr<const LoadedLesson> loaded) {
  // The lesson shown before stays alive to the end of this function: the player and the
  // views point into it until they are given the new one.
  const std::shared_ptr<const LoadedLesson> previous = std::exchange(m_loaded, std::move(loaded));
  const LessonRequest& r = m_loaded->request;
  showView(viewNamed(kindOf(m_loaded->lesson).view()));
  m_view->setLesson(m_loaded->lesson);
  m_about->setText(m_view->about(r.about, m_loaded->lesson, m_loaded->runConfig));
  if (r.catalogIndex >= 0 && r.boxTitle.isEmpty()) showMenuLessonOptions(r.catalogIndex);
  m_autograd->setCompared(m_loaded->compared);
  const QString name = QFileInfo(r.source.source == LessonLink::Source::File ? r.source.path : r.run).fileName();
  const QString title = m_loaded->title.isEmpty() ? m_view->title(m_loaded->lesson) : m_loaded->title;
  // First, so that what follows (side by side refused, unused stops) has the last word; it
  // replaces "Loading ...", which stayed.
  emit statusMessage(tr("Opened %1")
                         .arg(r.catalogIndex >= 0 && r.boxTitle.isEmpty()
                                  ? lessons()[static_cast<size_t>(r.catalogIndex)].title
                                  : title));
  if (!r.compareRun.isEmpty() && !m_loaded->compareError.isEmpty())
    emit statusMessage(tr("Side by side is not available: %1").arg(m_loaded->compareError));
  m_title->setText(tr("%1 · %2 · %3")
                       .arg(title)
                       .arg(countOf(static_cast<qint64>(m_loaded->lesson.steps.size()), tr("step")))
                       .arg(name));
  showSourceInBox(r.boxTitle.isEmpty() ? m_loaded->title : r.boxTitle);
  m_player->setLesson(m_loaded->lesson, m_loaded->stops);  // shows step 0
  if (r.source.source == LessonLink::Source::File) sayUnusedStops(name);
  emit lessonLoaded();
  if (!m_liveOutcome.isEmpty()) emit statusMessage(std::exchange(m_liveOutcome, QString()));
  if (m_pendingLink && sameSource(*m_pendingLink, m_loaded->request.source)) {
    showLinkState(*m_pendingLink);
    m_pendingLink.reset();
    emit linkShown();
  }
}

// A lesson of the menu: its recorded parameters in Workers and the views' options, and
// Side by side where it has a twin.
void LearnPage::showMenuLessonOptions(int index) {
  const LessonInfo& info = lessons()[static_cast<size_t>(index)];
  m_workers->setValue(info.workers);
  for (LessonView* view : m_views)
    view->setOptions(info);
  m_sideBySide->setEnabled(!info.compare_file.isEmpty());
  if (info.compare_file.isEmpty()) m_sideBySide->setChecked(false);
}

// Stops and narration past a lesson file's end are said, not silently dropped.
void LearnPage::sayUnusedStops(const QString& file) {
  const size_t steps = m_loaded->lesson.steps.size();
  const long beyond =
      std::count_if(stops().begin(), stops().end(), [&](int s) { return static_cast<size_t>(s) > steps; }) +
      std::count_if(m_loaded->narration.begin(), m_loaded->narration.end(),
                    [&](const auto& n) { return static_cast<size_t>(n.first) > steps; });
  if (beyond > 0)
    emit statusMessage(tr("%1: %2 past the lesson's %3 %4 not used")
                           .arg(file)
                           .arg(countOf(beyond, tr("stop or narrated step"), tr("stops or narrated steps")))
                           .arg(countOf(static_cast<qint64>(steps), tr("step")))
                           .arg(beyond == 1 ? tr("is") : tr("are")));
}

// The lesson box names the lesson shown: a file's or a run's title as an extra last item,
// removed when a lesson of the menu is opened again.
void LearnPage::showSourceInBox(const QString& title) {
  // Run live re-records a lesson of the menu (a live recording of one included); a file
  // or run of the user's own has no example to run again, nor a twin to show beside it.
  m_live->setEnabled(m_recorder->available() && m_loaded->request.catalogIndex >= 0 && !isRunningLive());
  if (m_loaded->request.source.source != LessonLink::Source::Builtin && m_loaded->request.catalogIndex < 0) {
    m_sideBySide->setChecked(false);
    m_sideBySide->setEnabled(false);
    m_autograd->clearCompared();
  }
  const QSignalBlocker block(m_lessonBox);
  while (m_lessonBox->count() > static_cast<int>(lessons().size()))
    m_lessonBox->removeItem(m_lessonBox->count() - 1);
  if (m_loaded->request.source.source == LessonLink::Source::Builtin) {
    m_lessonBox->setCurrentIndex(m_loaded->request.source.lesson);
    return;
  }
  m_lessonBox->addItem(title.isEmpty() ? QFileInfo(m_loaded->request.source.path).fileName() : title);
  m_lessonBox->setCurrentIndex(m_lessonBox->count() - 1);
}

QString LearnPage::copyLinkToStep() {
  if (m_loaded->lesson.steps.empty()) {
    emit statusMessage(tr("Open a lesson first (the Learn menu): a link names a lesson and its step"));
    return QString();
  }
  const QString text = linkToStep().toString();
  QApplication::clipboard()->setText(text);
  emit statusMessage(tr("Copied: %1").arg(text));
  return text;
}

LessonLink LearnPage::linkToStep() const {
  LessonLink link = m_loaded->request.source;
  link.step = static_cast<int>(m_player->applied());
  link.sideBySide = m_sideBySide->isChecked();
  link.predict = m_predict->isChecked();
  link.zoom = m_view->graph() ? m_view->graph()->zoom() : 0;
  return link;
}

bool LearnPage::isRunningLive() const { return m_recorder->isRecording(); }

bool LearnPage::runLive(QString* error) {
  if (m_loaded->request.catalogIndex < 0) {
    *error = tr("Run live re-records a lesson of the Learn menu: open one there first");
    return false;
  }
  LiveParameters params;
  params.workers = m_workers->value();
  for (const LessonView* view : m_views)
    view->readOptions(params);
  if (!m_recorder->start(lessons()[static_cast<size_t>(m_loaded->request.catalogIndex)], params, error)) return false;
  m_live->setEnabled(false);
  return true;
}

// A live recording ended: its run replays as the lesson it re-recorded (a FAST lesson on
// an unused RPC fails by design, and its run still replays), read off the UI thread.
void LearnPage::liveRunFinished(const QString& out, int code, const QString& lastLine) {
  m_live->setEnabled(true);
  const QString name = QFileInfo(out).fileName();
  if (!QFileInfo::exists(out)) {
    emit statusMessage(tr("The live run failed: %1").arg(lastLine));
    return;
  }
  m_liveOutcome =
      code == 0 ? tr("Recorded %1").arg(name) : tr("Recorded %1; the example failed: %2").arg(name, lastLine);
  openInBackground(requestLiveRecording(std::max(0, m_loaded->request.catalogIndex), out), QString());
}

// The replay's controls, as the player has them.
const std::vector<int>& LearnPage::stops() const { return m_player->stops(); }
size_t LearnPage::applied() const { return m_player->applied(); }
void LearnPage::stepForward() { m_player->stepForward(); }
void LearnPage::stepBack() { m_player->stepBack(); }
void LearnPage::toStart() { m_player->toStart(); }
void LearnPage::toEnd() { m_player->toEnd(); }
void LearnPage::setPlaying(bool playing) { m_player->setPlaying(playing); }
bool LearnPage::isPlaying() const { return m_player->isPlaying(); }
bool LearnPage::isAskingPrediction() const { return m_player->isAsking(); }
int LearnPage::score() const { return m_player->score(); }
int LearnPage::predictions() const { return m_player->predictions(); }

void LearnPage::showFeedback(const QString& text, bool right) {
  m_feedback->setText(text);
  m_feedback->setStyleSheet(right ? QStringLiteral("color: #1b7a2e; font-weight: bold")
                                  : QStringLiteral("color: #b3261e; font-weight: bold"));
  m_feedback->setVisible(!text.isEmpty());
}

void LearnPage::updateScore() {
  m_scoreLabel->setText(
      m_predict->isChecked() || predictions() > 0 ? tr("Score %1 of %2").arg(score()).arg(predictions()) : QString());
}

void LearnPage::showState() {
  const size_t applied = m_player->applied();
  m_view->showState(state(), applied, isAskingPrediction());
  m_stepLabel->setText(tr("Step %1 of %2").arg(applied).arg(m_loaded->lesson.steps.size()));
  if (isAskingPrediction()) {
    m_explanation->setText(m_view->question(m_loaded->lesson.steps[applied]));
  } else if (applied == 0) {
    m_explanation->setText(tr("Press Space to play, or Right to take one step."));
  } else {
    const auto narrated = m_loaded->narration.find(static_cast<int>(applied));
    m_explanation->setText(narrated != m_loaded->narration.end()
                               ? narrated->second
                               : QString::fromStdString(m_loaded->lesson.explain(applied - 1)));
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

void LearnPage::askNextStep() {
  m_predict->setChecked(true);
  stepForward();  // asks: the answer is clicked on the page
}

void LearnPage::revealNextStep() {
  m_predict->setChecked(false);
  stepForward();
}

}  // namespace ddpscope::gui
