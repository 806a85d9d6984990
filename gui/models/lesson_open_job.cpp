#include "lesson_open_job.h"

namespace ddpscope::gui {

LessonOpenJob::LessonOpenJob(QObject* parent)
    : QObject(parent), m_load(this, [this](Result r) {
        if (r.lesson) {
          emit opened(r.lesson);
        } else {
          emit failed(r.request, r.error);
        }
      }) {}

LessonOpenJob::~LessonOpenJob() = default;

void LessonOpenJob::open(const LessonRequest& request) {
  m_load.load([request] {
    Result r;
    r.request = request;
    if (auto lesson = readLesson(request, &r.error))
      r.lesson = std::make_shared<const LoadedLesson>(std::move(*lesson));
    return r;
  });
}

}  // namespace ddpscope::gui
