// NewestLoad: one read off the UI thread at a time, and only the newest request's result
// is delivered. A request made while a read runs replaces any other waiting one and
// starts when the running read ends (its result unseen), so what the user picked last
// is what is shown. RunOpenJob and LessonOpenJob read through it.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>
#include <functional>

namespace ddpscope::gui {

template <class Result>
class NewestLoad {
 public:
  // `done` receives the newest request's result, in `context`'s thread.
  NewestLoad(QObject* context, std::function<void(Result)> done) : m_done(std::move(done)) {
    QObject::connect(&m_watcher, &QFutureWatcher<Result>::finished, context, [this] { onFinished(); });
  }
  ~NewestLoad() { m_watcher.waitForFinished(); }
  NewestLoad(const NewestLoad&) = delete;
  NewestLoad& operator=(const NewestLoad&) = delete;

  // `read` runs on a pool thread: it must touch no widget.
  void load(std::function<Result()> read) {
    m_next = std::move(read);
    ++m_asked;
    if (!m_watcher.isRunning()) start();
  }
  // Forgets the request (a read under way finishes unseen).
  void cancel() { m_next = nullptr; }
  bool isBusy() const { return static_cast<bool>(m_next); }

 private:
  void start() {
    m_reading = m_asked;
    m_watcher.setFuture(QtConcurrent::run(m_next));
  }
  void onFinished() {
    Result result = m_watcher.result();
    if (!m_next) return;  // cancelled
    if (m_reading != m_asked) {
      start();  // asked for another meanwhile
      return;
    }
    m_next = nullptr;
    m_done(std::move(result));
  }

  std::function<void(Result)> m_done;
  std::function<Result()> m_next;  // the newest request; empty when none waits
  quint64 m_asked = 0, m_reading = 0;
  QFutureWatcher<Result> m_watcher;
};

}  // namespace ddpscope::gui
