// RunOpenJob: reads a run file off the UI thread, so the window keeps drawing (and says
// what it is opening) while a large run loads; the file opened last is the one shown
// (NewestLoad).
#pragma once

#include <QObject>
#include <memory>

#include "newest_load.h"
#include "run_data.h"

namespace ddpscope::gui {

class RunOpenJob : public QObject {
  Q_OBJECT

 public:
  explicit RunOpenJob(QObject* parent = nullptr);
  ~RunOpenJob() override;

  void open(const QString& path);
  // Forgets the request (a load under way finishes unseen).
  void cancel();
  bool isBusy() const { return !m_path.isEmpty(); }
  QString path() const { return m_path; }  // the file being opened, or empty

 signals:
  void started(const QString& path);
  void opened(const QString& path, std::shared_ptr<const ddpscope::gui::RunData> run);
  void failed(const QString& path, const QString& message);

 private:
  struct Result {
    std::shared_ptr<const RunData> run;
    QString error;
  };
  void onFinished(Result r);

  QString m_path;  // the newest request, the one whose result is shown
  NewestLoad<Result> m_load;
};

}  // namespace ddpscope::gui
