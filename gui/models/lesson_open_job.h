// LessonOpenJob: reads a lesson (lesson_request.h) off the UI thread, as RunOpenJob reads
// runs, so the Learn page keeps drawing while a recording loads, even when the request
// comes from a process's end or a class's message. The lesson asked for last is the one
// delivered (NewestLoad).
#pragma once

#include <QObject>
#include <memory>

#include "lesson_request.h"
#include "newest_load.h"

namespace ddpscope::gui {

class LessonOpenJob : public QObject {
  Q_OBJECT

 public:
  explicit LessonOpenJob(QObject* parent = nullptr);
  ~LessonOpenJob() override;

  void open(const LessonRequest& request);
  // Forgets the request: a read under way finishes unseen (a lesson opened since wins).
  void cancel() { m_load.cancel(); }
  bool isBusy() const { return m_load.isBusy(); }

 signals:
  void opened(std::shared_ptr<const ddpscope::gui::LoadedLesson> lesson);
  void failed(const ddpscope::gui::LessonRequest& request, const QString& message);

 private:
  struct Result {
    LessonRequest request;
    std::shared_ptr<const LoadedLesson> lesson;
    QString error;
  };
  NewestLoad<Result> m_load;
};

}  // namespace ddpscope::gui
