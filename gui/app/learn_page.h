// LearnPage: the Learn tab, teaching the distributed backward algorithm. It replays a
// real recorded run step by step (a Lesson). At each step:
//   - the graph shows which node runs, each node's count left and which nodes are done;
//   - a sentence generated from the event says what happened;
//   - lists show the messages in flight and the gradients already in the context.
// Keys: Space plays or pauses, Right and Left step, Home and End jump to either end.
// "Predict the next step" stops before each node runs and asks the student to click the
// node that runs next, keeping a score. "Run live" re-records the lesson's example with
// the chosen workers and mode through ddpscope-cli and replays that run.
#pragma once

#include <QWidget>
#include <map>
#include <memory>

#include "lesson.h"
#include "lesson_link.h"

class QCheckBox;
class QHBoxLayout;
class QSplitter;
class QStackedWidget;
class QVBoxLayout;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QProcess;
class QPushButton;
class QSlider;
class QSpinBox;
class QTimer;

namespace ddpscope::gui {

class BucketFillView;
class RingView;
class GraphView;
class SequenceView;

class LearnPage : public QWidget {
  Q_OBJECT

 public:
  // Shows `bar` (a class's, class_bar.h) above the lesson; the page owns it from then on.
  void setClassBar(QWidget* bar);
  // `workspace`: where live re-recordings go; `cli`: ddpscope-cli (empty: no live runs).
  LearnPage(const QString& workspace, const QString& cli, QWidget* parent = nullptr);
  ~LearnPage() override;

  // A lesson of the catalog (lesson_catalog.h), from its shipped recording.
  bool openLesson(int index, QString* error);
  // Any run with a recorded distributed pass: its first context.
  bool openRun(const QString& path, QString* error);
  // A lesson file (probes/lesson_file.h): its run, title, words, stops and narration.
  bool openLessonFile(const QString& path, QString* error);
  // A link to the step shown (lesson, step, side by side, predict mode, the graph's zoom),
  // and the state a link names; false with *error when its lesson cannot be opened here.
  LessonLink linkToStep() const;
  // The link to the step shown, put on the clipboard (said in statusMessage); empty with
  // no lesson open.
  QString copyLinkToStep();
  bool openLink(const LessonLink& link, QString* error);
  const std::vector<int>& stops() const { return m_stops; }
  // Re-records the current lesson with the chosen parameters, then replays that run.
  bool runLive(QString* error);
  bool isRunningLive() const;

  const Lesson& lesson() const { return m_lesson; }
  size_t applied() const { return m_applied; }  // steps shown so far
  LessonState state() const { return m_lesson.state_after(m_applied); }
  void stepForward();
  void stepBack();
  void toStart();
  void toEnd();
  void setPlaying(bool playing);
  bool isPlaying() const;
  void setStepsPerSecond(double rate);

  // Predict mode: true while the page waits for the student to click a node.
  bool isAskingPrediction() const { return m_asking; }
  int score() const { return m_score; }
  int predictions() const { return m_predictions; }

  GraphView* graph() const { return m_graph; }
  RingView* ringView() const { return m_ring; }
  QLabel* explanation() const { return m_explanation; }
  QLabel* aboutLabel() const { return m_about; }  // the lesson's words for the run loaded
  // Predict mode: what the last click was told (right, or why not), on the page.
  QLabel* feedback() const { return m_feedback; }
  QCheckBox* predictBox() const { return m_predict; }
  QComboBox* lessonBox() const { return m_lessonBox; }
  QSpinBox* workersBox() const { return m_workers; }
  QComboBox* modeBox() const { return m_mode; }
  QListWidget* inFlightList() const { return m_inFlight; }
  SequenceView* sequence() const { return m_sequence; }
  BucketFillView* bucketView() const { return m_buckets; }
  QDoubleSpinBox* bucketCapBox() const { return m_bucketCap; }
  QCheckBox* unusedBox() const { return m_unused; }
  QCheckBox* findUnusedBox() const { return m_findUnused; }
  QCheckBox* sideBySideBox() const { return m_sideBySide; }
  const Lesson& compared() const { return m_compare; }
  GraphView* compareGraph() const { return m_compareGraph; }
  QLabel* compareExplanation() const { return m_compareExplanation; }
  QListWidget* gradientList() const { return m_gradients; }

 signals:
  void statusMessage(const QString& text);
  void lessonLoaded();
  // The state shown changed (a step, a lesson, side by side, predict): a class follows it.
  void stepShown();
  // Predict mode: the student's first answer to the question asked (the node's name, or
  // "block N" in a ring lesson).
  void answered(const QString& choice);

 protected:
  void keyPressEvent(QKeyEvent* event) override;
  // The first time the page shows with nothing loaded, it loads the lesson its box
  // names: Play and the keys work at once.
  void showEvent(QShowEvent* event) override;

 private:
  void addLessonBars(QVBoxLayout* layout);
  QWidget* buildGraphs();
  QWidget* buildSidePanel();
  QHBoxLayout* buildControls();
  void connectSignals();
  // `kind`: a kind's name (lesson_kind.h), or "" for the first the run holds.
  bool load(const QString& path, const QString& kind, int rank, QString* error);
  void showState();
  void onNodeClicked(int node);
  void onRingCellClicked(int rank, int block);
  void updateScore();
  void showFeedback(const QString& text, bool right);
  void acceptAnswer(const QString& right);
  void missAnswer();
  QString aboutRun(probes::RunStoreReader& reader) const;
  void showSourceInBox(const QString& title);

  QString m_workspace, m_cli;
  Lesson m_lesson;
  size_t m_applied = 0;
  bool m_asking = false;  // waiting for the student's guess of steps[m_applied]
  bool m_openedOnShow = false;
  bool m_guessed_wrong = false;
  int m_score = 0, m_predictions = 0;
  GraphView* m_graph = nullptr;
  SequenceView* m_sequence = nullptr;   // the lesson's messages so far, those in flight dashed
  BucketFillView* m_buckets = nullptr;  // a DDP lesson's buckets filling
  QDoubleSpinBox* m_bucketCap = nullptr;
  QCheckBox* m_unused = nullptr;      // DDP lessons: rank 1 skips a layer
  QCheckBox* m_findUnused = nullptr;  // DDP lessons: find_unused_parameters
  // Side by side (lesson 2): the other mode's recording, stepped along with this one.
  QCheckBox* m_sideBySide = nullptr;
  Lesson m_compare;
  GraphView* m_compareGraph = nullptr;
  QLabel* m_compareExplanation = nullptr;
  QWidget* m_comparePane = nullptr;
  QSplitter* m_graphs = nullptr;  // the graph above, the compared graph below
  RingView* m_ring = nullptr;     // a ring lesson's ranks and blocks, in the graph's place
  QLabel* m_ringTally = nullptr;  // a ring lesson: bytes sent per rank so far
  QWidget* m_ringFiller = nullptr;
  QStackedWidget* m_graphStack = nullptr;
  QSplitter* m_split = nullptr;  // the graphs left, the step's panel right
  bool m_splitPlaced = false;
  QWidget* m_modeField = nullptr;    // distributed-autograd lessons: "Mode" and its box
  QWidget* m_bucketField = nullptr;  // DDP lessons: "Bucket cap" and its box
  void showCompare();
  QLabel* m_title = nullptr;
  QLabel* m_about = nullptr;
  QLabel* m_explanation = nullptr;
  QLabel* m_stepLabel = nullptr;
  QLabel* m_feedback = nullptr;
  QString m_aboutTemplate;             // the lesson's words; {cap} filled from the run loaded
  LessonLink m_source;                 // what is replayed: a lesson of the menu, a lesson file, a run
  int m_catalogIndex = -1;             // the menu's lesson shown or live-recorded; -1: a file or run of the user's
  std::vector<int> m_stops;            // a lesson file's: Play stops after these steps
  std::map<int, QString> m_narration;  // a lesson file's words for its steps
  QLabel* m_scoreLabel = nullptr;
  QListWidget* m_inFlight = nullptr;
  QLabel* m_inFlightTitle = nullptr;
  QLabel* m_gradientsTitle = nullptr;
  QListWidget* m_gradients = nullptr;
  QComboBox* m_lessonBox = nullptr;
  QSpinBox* m_workers = nullptr;
  QComboBox* m_mode = nullptr;
  QPushButton* m_live = nullptr;
  QPushButton* m_play = nullptr;
  QCheckBox* m_predict = nullptr;
  QSlider* m_speed = nullptr;
  QTimer* m_timer = nullptr;
  QProcess* m_process = nullptr;
};

}  // namespace ddpscope::gui
