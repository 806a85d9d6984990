// The lessons the app ships (resources/lessons), loaded as the Learn page loads them, for
// the tests of the views that draw them.
#pragma once

#include <QString>

#include "ddp_lesson.h"
#include "lesson.h"
#include "ring_lesson.h"
#include "run_store_reader.h"

namespace ddpscope::gui::testing {

// The recording `file` of resources/lessons: a ring allreduce, a DDP rank's iterations,
// or (else) the first distributed backward pass.
inline Lesson shippedLesson(const QString& file) {
  probes::RunStoreReader run((QStringLiteral(DDPSCOPE_LESSONS_DIR "/") + file).toStdString());
  if (file.startsWith("ring")) return loadRingLesson(run);
  if (file.startsWith("ddp") || file.startsWith("zero")) return loadDdpLesson(run, 0);
  return loadLesson(run, 1);
}

// The index of the first step of `kind` at or after `from`; the lesson's size if none.
inline size_t firstStep(const Lesson& lesson, StepKind kind, size_t from = 0) {
  for (size_t i = from; i < lesson.steps.size(); ++i)
    if (lesson.steps[i].kind == kind) return i;
  return lesson.steps.size();
}

}  // namespace ddpscope::gui::testing
