#include "lesson_kind.h"

namespace ddpscope::gui {

const std::vector<const LessonKind*>& lessonKinds() {
  // A ring run holds nothing else to replay; a DDP run may hold a distributed pass too
  // (--remote-embedding), and replays as autograd unless asked for its ranks.
  static const std::vector<const LessonKind*> kinds = {&ringLessonKind(), &autogradLessonKind(), &ddpLessonKind()};
  return kinds;
}

const LessonKind* lessonKindNamed(const std::string& name) {
  for (const LessonKind* k : lessonKinds())
    if (name == k->name()) return k;
  return nullptr;
}

const LessonKind& kindOf(const Lesson& lesson) {
  if (lesson.kind) return *lesson.kind;
  return lesson.ring ? ringLessonKind() : lesson.ddp ? ddpLessonKind() : autogradLessonKind();
}

}  // namespace ddpscope::gui
