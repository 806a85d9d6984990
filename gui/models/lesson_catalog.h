// The Learn menu's lessons: each replays a real recorded run shipped in
// resources/lessons (re-recorded by its record.sh), and can re-run its example live with
// the student's parameters through ddpscope-cli.
#pragma once

#include <QString>
#include <QStringList>
#include <vector>

namespace ddpscope::gui {

struct LessonInfo {
  QString title;    // in plain words: "Distributed backward (FAST mode)"
  QString file;     // the shipped recording, in lessonsDir()
  QString example;  // ddpscope-cli example NAME
  QString mode;     // fast | smart
  int workers = 2;
  QString about;     // what to watch for; {cap}: the recorded run's bucket cap in MiB
  bool ddp = false;  // a DDP lesson: `train` of the MLP, its parameter the bucket cap
  double bucket_cap_mb = 1;
  int rank = 0;                   // a DDP lesson's rank to replay
  bool unused_parameter = false;  // a DDP lesson whose rank 1 skips a layer
  QString compare_file;           // shown side by side with this one (lesson 2: FAST and SMART)
  bool zero = false;              // a DDP lesson of train --zero-overlap (AdamW)
  bool ring = false;              // the ring allreduce's steps (ring_lesson.h; example ring)
};

const std::vector<LessonInfo>& lessons();
// "7. The ring allreduce": the number is the one links, --lesson and `ddpscope-cli lesson
// show` take (its place in lessons(), from 1).
QString lessonMenuTitle(size_t index);
// Where the shipped recordings are: $DDPSCOPE_LESSONS_DIR, next to an installed app
// (../share/ddpscope/lessons), or the source tree; empty when none has them.
QString lessonsDir();
// What the student may change before re-recording a lesson.
struct LiveParameters {
  int workers = 2;
  QString mode = QStringLiteral("fast");  // distributed autograd lessons
  double bucket_cap_mb = 1;               // DDP lessons, and:
  bool unused_parameter = false;          // rank 1 skips a layer (train --inject-unused 1)
  bool find_unused_parameters = false;    // DDP is told (train --find-unused-parameters)
};
// The lesson kind (lesson_kind.h) the lesson's recording is replayed as.
QString lessonKindName(const LessonInfo& lesson);
// A re-recording's name part for these parameters ("cap0.25-unused", "smart").
QString liveVariant(const LessonInfo& lesson, const LiveParameters& p);
// ddpscope-cli's arguments that re-record `lesson` with these parameters into `out`.
QStringList liveArguments(const LessonInfo& lesson, const LiveParameters& p, const QString& out);

}  // namespace ddpscope::gui
