// A kind of lesson (a distributed autograd pass, a rank's DDP iterations, a ring
// allreduce): what differs between kinds, behind one interface. A new kind is a class in
// its own file and one line in lessonKinds(); the Learn tab, `lesson show` and the
// loader ask the kind, not flags. Plain data, no Qt.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lesson.h"

namespace ddpscope::gui {

class LessonKind {
 public:
  virtual ~LessonKind() = default;
  // "autograd", "ddp", "ring": lesson files' "kind" and `lesson show --json`'s.
  virtual const char* name() const = 0;
  // The Learn page's view that draws it (gui/app/lesson_view.h): "graph" (a distributed
  // autograd graph, its messages and context), "buckets" (a rank's graph and its DDP
  // buckets), "ring" (ranks and their blocks). Kinds may share a view.
  virtual const char* view() const = 0;
  // Whether `run` holds this kind to replay when nothing says which (the first kind in
  // lessonKinds() that does is taken).
  virtual bool foundIn(probes::RunStoreReader& run) const = 0;
  // The lesson (`rank`: whose, for a kind that replays one rank). Empty steps: none.
  virtual Lesson load(probes::RunStoreReader& run, int rank) const = 0;
  virtual LessonState stateAfter(const Lesson& lesson, size_t applied) const = 0;
  virtual std::string explain(const Lesson& lesson, size_t i) const = 0;
  // Predict mode asks the student before this step.
  virtual bool asksBefore(const LessonStep& next) const = 0;
  // What the kind's views draw of `state`, as `lesson show --json` gives it.
  virtual void describe(const Lesson& lesson, const LessonState& state, nlohmann::json& out) const = 0;
};

// Every kind, in the order a run is tried against them.
const std::vector<const LessonKind*>& lessonKinds();
const LessonKind* lessonKindNamed(const std::string& name);
// The kind of a loaded lesson.
const LessonKind& kindOf(const Lesson& lesson);

// The kinds themselves, each defined beside its lesson's code.
const LessonKind& ringLessonKind();      // ring_lesson.cpp
const LessonKind& ddpLessonKind();       // ddp_lesson.cpp
const LessonKind& autogradLessonKind();  // lesson.cpp

}  // namespace ddpscope::gui
