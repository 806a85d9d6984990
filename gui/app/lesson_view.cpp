#include "lesson_view.h"

#include "autograd_lesson_view.h"
#include "bucket_lesson_view.h"
#include "ring_lesson_view.h"

namespace ddpscope::gui {

const Lesson& noLesson() {
  static const Lesson empty;
  return empty;
}

std::vector<LessonView*> makeLessonViews(QObject* parent) {
  return {new AutogradLessonView(parent), new BucketLessonView(parent), new RingLessonView(parent)};
}

}  // namespace ddpscope::gui
