#include "lesson_request.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include "learn_page_text.h"
#include "lesson_catalog.h"
#include "graph_data.h"
#include "lesson_file.h"
#include "lesson_loader.h"
#include "run_store_reader.h"
#include "user_message.h"

namespace ddpscope::gui {
namespace {

// A lesson file: its run (beside it), kind, rank, words, title, stops and narration.
bool readLessonFile(LoadedLesson& out, QString* error) {
  const QString path = out.request.source.path;
  probes::LessonFile file;
  try {
    file = probes::read_lesson_file(path.toStdString());
    out.request.run = QString::fromStdString(probes::lesson_run_path(path.toStdString(), file));
  } catch (const std::exception& e) {
    *error = userMessage(e);
    return false;
  }
  if (!QFileInfo::exists(out.request.run)) {
    *error = learnPageTr(
                 "The lesson %1 replays %2, which is not there: keep the run file beside the lesson file (as "
                 "ddpscope-cli lesson make wrote them), or make the lesson again")
                 .arg(QFileInfo(path).fileName(), out.request.run);
    return false;
  }
  out.request.kind = QString::fromStdString(file.kind);
  out.request.rank = file.rank;
  out.request.about = QString::fromStdString(file.about);
  out.title = QString::fromStdString(file.title);
  out.stops = file.stops;
  for (const auto& [step, text] : file.narration)
    out.narration[step] = QString::fromStdString(text);
  return true;
}

// Lesson 2's twin: the first distributed pass of the other mode's recording.
void readCompared(LoadedLesson& out) {
  try {
    probes::RunStoreReader other(out.request.compareRun.toStdString());
    const auto graphs = listDistGraphs(other);
    if (!graphs.empty()) out.compared = loadLesson(other, graphs.front().ctx_id, graphs.front().pass);
  } catch (const std::exception& e) {
    out.compareError = userMessage(e);
  }
}

}  // namespace

std::optional<LessonRequest> requestMenuLesson(int index, QString* error) {
  if (index < 0 || index >= static_cast<int>(lessons().size())) {
    *error = learnPageTr("There is no lesson %1").arg(index + 1);
    return std::nullopt;
  }
  const QString dir = lessonsDir();
  if (dir.isEmpty()) {
    *error = learnPageTr(
        "The lessons' recorded runs were not found (resources/lessons, or share/ddpscope/lessons "
        "next to the app); set DDPSCOPE_LESSONS_DIR, or use Run live");
    return std::nullopt;
  }
  const LessonInfo& info = lessons()[static_cast<size_t>(index)];
  LessonRequest r;
  r.source.source = LessonLink::Source::Builtin;
  r.source.lesson = index;
  r.run = QDir(dir).filePath(info.file);
  r.kind = lessonKindName(info);
  r.rank = info.rank;
  r.about = info.about;
  if (!info.compare_file.isEmpty()) r.compareRun = QDir(dir).filePath(info.compare_file);
  r.catalogIndex = index;
  return r;
}

LessonRequest requestLessonFile(const QString& path) {
  LessonRequest r;
  r.source.source = LessonLink::Source::File;
  r.source.path = QFileInfo(path).absoluteFilePath();
  return r;
}

LessonRequest requestRun(const QString& path) {
  LessonRequest r;
  r.source.source = LessonLink::Source::Run;
  r.source.path = QFileInfo(path).absoluteFilePath();
  r.run = path;
  r.about = learnPageTr("A run of your own: its first distributed autograd context, or rank 0's first DDP iterations.");
  return r;
}

LessonRequest requestLiveRecording(int index, const QString& run) {
  const LessonInfo& info = lessons()[static_cast<size_t>(index)];
  LessonRequest r = requestRun(run);
  r.kind = lessonKindName(info);
  r.rank = info.rank;
  r.about = info.about;
  r.catalogIndex = index;            // Run live again re-records the same lesson
  const QString dir = lessonsDir();  // lesson 2's twin stays beside a live FAST or SMART
  if (!info.compare_file.isEmpty() && !dir.isEmpty()) r.compareRun = QDir(dir).filePath(info.compare_file);
  r.boxTitle = learnPageTr("%1 (live: %2)").arg(info.title, QFileInfo(run).fileName());
  return r;
}

std::optional<LessonRequest> requestLink(const LessonLink& link, QString* error) {
  if (link.source == LessonLink::Source::Builtin) return requestMenuLesson(link.lesson, error);
  const bool file = link.source == LessonLink::Source::File;
  if (!QFileInfo::exists(link.path)) {
    *error = learnPageTr(
                 "This link opens %1, which is not on this machine: ask whoever sent it for the %2 (%3), then "
                 "open it here, or put it at that path")
                 .arg(link.path, file ? learnPageTr("lesson file and its run") : learnPageTr("run file"),
                      file ? learnPageTr("Learn > Open a lesson file...") : learnPageTr("File > Open run"));
    return std::nullopt;
  }
  return file ? requestLessonFile(link.path) : requestRun(link.path);
}

std::optional<LoadedLesson> readLesson(const LessonRequest& request, QString* error) {
  LoadedLesson out;
  out.request = request;
  if (request.source.source == LessonLink::Source::File && !readLessonFile(out, error)) return std::nullopt;
  const QString& path = out.request.run;
  try {
    probes::RunStoreReader reader(path.toStdString());
    std::string whyNone;
    out.lesson = loadRunLesson(reader, out.request.kind.toStdString(), out.request.rank, whyNone);
    if (out.lesson.steps.empty()) {
      *error = QString::fromStdString(whyNone);
      return std::nullopt;
    }
    out.runConfig = reader.run().config_json;
  } catch (const std::exception& e) {
    *error = learnPageTr("Cannot open %1: %2").arg(path, userMessage(e));
    return std::nullopt;
  }
  if (!request.compareRun.isEmpty()) readCompared(out);
  return out;
}

}  // namespace ddpscope::gui
