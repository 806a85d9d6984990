// LearnPage: the Learn tab, teaching distributed training by replaying a real recorded
// run step by step (a Lesson). The page keeps what every lesson has: the steps and their
// words (generated, or a lesson file's narration), the controls, Predict mode's score,
// links to a step and Run live. What a step shows is drawn by the view the lesson's kind
// names (lesson_view.h): the autograd graph and its messages, a rank's DDP buckets, or a
// ring of ranks and blocks.
// Keys: Space plays or pauses, Right and Left step, Home and End jump to either end.
// "Predict the next step" stops before each step the kind asks about, and the view judges
// the click. "Run live" re-records the lesson's example with the chosen workers and the
// view's options through ddpscope-cli and replays that run.
#pragma once

#include <QWidget>
#include <map>
#include <memory>

#include "lesson.h"
#include "lesson_link.h"
#include "lesson_request.h"

class QCheckBox;
class QHBoxLayout;
class QSplitter;
class QStackedWidget;
class QVBoxLayout;
class QComboBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace ddpscope::gui {

class AutogradLessonView;
class LessonOpenJob;
class LessonPlayer;
class GraphView;
class LessonLiveRecorder;
class LessonView;
struct LessonAnswer;

class LearnPage : public QWidget {
  Q_OBJECT

 public:
  // Shows `bar` (a class's, class_bar.h) above the lesson; the page owns it from then on.
  void setClassBar(QWidget* bar);
  // `workspace`: where live re-recordings go; `cli`: ddpscope-cli (empty: no live runs).
  LearnPage(const QString& workspace, const QString& cli, QWidget* parent = nullptr);
  ~LearnPage() override;

  // These read the lesson on the calling thread and show it before they return (the
  // command line, scripts and tests want it shown); what the user picks in the app is read
  // off the UI thread (openLessonInBackground, followLink, Run live, the first showing).
  // A lesson of the catalog (lesson_catalog.h), from its shipped recording.
  bool openLesson(int index, QString* error);
  // Any run with a recorded distributed pass: its first context.
  bool openRun(const QString& path, QString* error);
  // A lesson file (probes/formats/lesson_file.h): its run, title, words, stops and narration.
  bool openLessonFile(const QString& path, QString* error);
  // Lesson `index` of the menu, read off the UI thread; failures said in statusMessage.
  void openLessonInBackground(int index);
  // A class's step (classroom_controller.h): shown at once when it is in the lesson shown,
  // else once its lesson is read off the UI thread; linkShown or linkFailed says which.
  void followLink(const LessonLink& link);
  // A link to the step shown (lesson, step, side by side, predict mode, the graph's zoom),
  // and the state a link names; false with *error when its lesson cannot be opened here.
  LessonLink linkToStep() const;
  // The link to the step shown, put on the clipboard (said in statusMessage); empty with
  // no lesson open.
  QString copyLinkToStep();
  bool openLink(const LessonLink& link, QString* error);
  const std::vector<int>& stops() const;
  // Re-records the current lesson with the chosen parameters, then replays that run.
  bool runLive(QString* error);
  bool isRunningLive() const;

  const Lesson& lesson() const { return m_loaded->lesson; }
  // Stepping, playing and Predict mode's score (lesson_player.h).
  LessonPlayer* player() const { return m_player; }
  size_t applied() const;  // steps shown so far
  LessonState state() const { return m_loaded->lesson.stateAfter(applied()); }
  void stepForward();
  // What the classroom (classroom_controller.h) asks of the page besides links to steps:
  // whether a lesson is open, and the next step asked as a question (Predict mode) or shown.
  bool hasLesson() const { return !lesson().steps.empty(); }
  void askNextStep();
  void revealNextStep();
  void stepBack();
  void toStart();
  void toEnd();
  void setPlaying(bool playing);
  bool isPlaying() const;
  // Predict mode: true while the page waits for the student to click a node.
  bool isAskingPrediction() const;
  int score() const;
  int predictions() const;

  // The graph the lesson shown draws (the autograd lesson's when it draws none).
  GraphView* graph() const;
  QLabel* explanation() const { return m_explanation; }
  QLabel* aboutLabel() const { return m_about; }  // the lesson's words for the run loaded
  // Predict mode: what the last click was told (right, or why not), on the page.
  QLabel* feedback() const { return m_feedback; }
  QCheckBox* predictBox() const { return m_predict; }
  QComboBox* lessonBox() const { return m_lessonBox; }
  QSpinBox* workersBox() const { return m_workers; }
  QCheckBox* sideBySideBox() const { return m_sideBySide; }
  // The view drawing the lesson shown (lesson_view.h), and each view by its class (null when
  // the page has none of that class): lessonView<RingLessonView>().
  LessonView* view() const { return m_view; }
  template <class View>
  View* lessonView() const {
    for (LessonView* v : m_views)
      if (auto* view = qobject_cast<View*>(v)) return view;
    return nullptr;
  }

 signals:
  void statusMessage(const QString& text);
  void lessonLoaded();
  // The state shown changed (a step, a lesson, side by side, predict): a class follows it.
  void stepShown();
  // Predict mode: the student's first answer to the question asked (the node's name, or
  // "block N" in a ring lesson).
  void answered(const QString& choice);
  void linkShown();                     // followLink's step is on screen
  void linkFailed(const QString& why);  // followLink's lesson cannot be shown here

 protected:
  void keyPressEvent(QKeyEvent* event) override;
  // The first time the page shows with nothing loaded, it loads the lesson its box
  // names: Play and the keys work at once.
  void showEvent(QShowEvent* event) override;

 private:
  void addLessonBars(QVBoxLayout* layout);
  QWidget* buildSidePanel();
  void addViews();
  void connectSignals();
  bool openNow(const std::optional<LessonRequest>& request, QString* error);
  void openInBackground(const std::optional<LessonRequest>& request, const QString& error);
  void onOpenFailed(const QString& message);
  void showLoaded(std::shared_ptr<const LoadedLesson> loaded);
  void showMenuLessonOptions(int index);
  void sayUnusedStops(const QString& file);
  void showLinkState(const LessonLink& link);
  void showView(LessonView* view);
  LessonView* viewNamed(const char* name) const;
  void showState();
  void updateScore();
  void showFeedback(const QString& text, bool right);
  void showSourceInBox(const QString& title);
  void liveRunFinished(const QString& out, int code, const QString& lastLine);

  LessonLiveRecorder* m_recorder = nullptr;  // Run live
  LessonOpenJob* m_opener = nullptr;         // reads lessons off the UI thread
  // The lesson shown, as read: its steps, its source (a lesson of the menu, a file, a run),
  // the menu's lesson it replays or re-records (-1: the user's own), a file's narration.
  std::shared_ptr<const LoadedLesson> m_loaded;
  LessonLink m_loading;                     // what m_opener reads, while it is busy
  std::optional<LessonLink> m_pendingLink;  // followLink's, shown when its lesson is read
  QString m_liveOutcome;                    // Run live's words, said when its run is shown
  LessonPlayer* m_player = nullptr;         // where the replay stands
  bool m_openedOnShow = false;
  std::vector<LessonView*> m_views;  // every kind's view; one shown at a time
  LessonView* m_view = nullptr;      // the lesson shown's
  // The graph view: it draws every kind without a view of its own, side by side and compared.
  AutogradLessonView* m_autograd = nullptr;
  QStackedWidget* m_stages = nullptr;   // the views' stages, left
  QVBoxLayout* m_panels = nullptr;      // the step's words, then the views' panels, right
  QHBoxLayout* m_optionsRow = nullptr;  // Workers, the views' options, Run live
  QCheckBox* m_sideBySide = nullptr;    // lesson 2: the other mode's recording, stepped along
  QSplitter* m_split = nullptr;         // the stages left, the step's panel right
  bool m_splitPlaced = false;
  QLabel* m_title = nullptr;
  QLabel* m_about = nullptr;
  QLabel* m_explanation = nullptr;
  QLabel* m_stepLabel = nullptr;
  QLabel* m_feedback = nullptr;
  QLabel* m_scoreLabel = nullptr;
  QComboBox* m_lessonBox = nullptr;
  QSpinBox* m_workers = nullptr;
  QPushButton* m_live = nullptr;
  QCheckBox* m_predict = nullptr;
};

}  // namespace ddpscope::gui
