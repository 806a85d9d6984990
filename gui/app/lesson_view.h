// LessonView: what a kind of lesson draws on the Learn page (lesson_kind.h names it by
// view()). The page keeps what every lesson has: the steps, their words, the controls,
// Predict mode's score, links and the class. A view draws the rest:
//   - its stage, in the graph's place (an autograd graph, a ring of ranks);
//   - its panel, under the step's words (messages in flight, buckets, bytes sent);
//   - the options Run live re-records its lessons with;
//   - its title line and Predict mode's question, and judges the student's click.
// A new view is a class like these and one line in makeLessonViews(). Its widgets are
// the page's once the page has laid them out (it always does).
#pragma once

#include <QObject>
#include <QString>
#include <memory>
#include <vector>

#include "lesson.h"
#include "lesson_catalog.h"

class QWidget;

namespace ddpscope::gui {

class GraphView;

// The student's click in Predict mode, judged.
struct LessonAnswer {
  QString choice;  // what was clicked, for the class ("AddBackward0 on worker 1", "rank 2, block 3")
  bool right = false;
  QString verdict;  // "Right: ..." or "Not ...: why. Try again."
};

class LessonView : public QObject {
  Q_OBJECT

 public:
  using QObject::QObject;
  // "graph", "buckets", "ring": the name kinds give in LessonKind::view().
  virtual const char* name() const = 0;
  virtual QWidget* stage() = 0;
  virtual QWidget* panel() = 0;
  // The fields Run live re-records with, beside Workers; null when there are none.
  virtual QWidget* options() { return nullptr; }
  // The graph it draws, if any (links keep its zoom).
  virtual GraphView* graph() { return nullptr; }

  // A lesson loaded (the page's; it outlives the view's use of it).
  virtual void setLesson(const Lesson& lesson) = 0;
  // The state after `applied` steps; `asking`: Predict mode waits for a click.
  virtual void showState(const LessonState& state, size_t applied, bool asking) = 0;
  // The title line's start, before "· N steps · file".
  virtual QString title(const Lesson& lesson) const = 0;
  // Predict mode's question about `next`.
  virtual QString question(const LessonStep& next) const = 0;
  // The lesson's words for the run loaded: `about` as the catalog or file wrote it;
  // `runConfig`: the run's config JSON.
  virtual QString about(const QString& about, const Lesson&, const std::string& /*runConfig*/) const { return about; }

  // A lesson of the menu opened: its recorded parameters into the options.
  virtual void setOptions(const LessonInfo&) {}
  // The options, for Run live.
  virtual void readOptions(LiveParameters&) const {}

 signals:
  // Predict mode: the student clicked an answer to the question asked.
  void answered(const LessonAnswer& answer);
};

// An empty lesson: what a view shows before the page gives it one (the keys and Predict
// work before the first lesson opens).
const Lesson& noLesson();

// Every view, in the order the page stacks them.
std::vector<LessonView*> makeLessonViews(QObject* parent);

}  // namespace ddpscope::gui
