#include "lesson_kind.h"

namespace ddpscope::gui {

const std::vector<const LessonKind*>& lesson_kinds() {
  // A ring run holds nothing else to replay; a DDP run may hold a distributed pass too
  // (--remote-embedding), and replays as autograd unless asked for its ranks.
  static const std::vector<const LessonKind*> kinds = {&ring_lesson_kind(), &autograd_lesson_kind(),
                                                       &ddp_lesson_kind()};
  return kinds;
}

const LessonKind* lesson_kind_named(const std::string& name) {
  for (const LessonKind* k : lesson_kinds())
    if (name == k->name()) return k;
  return nullptr;
}

const LessonKind& kind_of(const Lesson& lesson) {
  if (lesson.kind) return *lesson.kind;
  return lesson.ring ? ring_lesson_kind() : lesson.ddp ? ddp_lesson_kind() : autograd_lesson_kind();
}

}  // namespace ddpscope::gui
