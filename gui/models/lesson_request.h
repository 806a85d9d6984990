// What the Learn page asks to replay (a lesson of the menu, a lesson file, a run of the
// user's, a live re-recording of a menu lesson) and everything it reads for it: the
// run's lesson, the run's config, a lesson file's words and stops, lesson 2's twin.
// Reading touches only files and plain data, so the page runs it off the UI thread
// (LessonOpenJob) and shows the result; `lesson show` and scripts read it in place.
#pragma once

#include <QString>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lesson.h"
#include "lesson_link.h"

namespace ddpscope::gui {

struct LessonRequest {
  LessonLink source;      // what the page says it replays: source, lesson and path (a file's or a run's)
  QString run;            // the run file to read (a lesson file's is found when read)
  QString kind;           // a kind's name (lesson_kind.h), or "": the first the run holds
  int rank = 0;           // a DDP lesson's rank
  QString about;          // the lesson's words; {cap} is filled from the run read
  QString compareRun;     // lesson 2: the other mode's recording, stepped beside it
  int catalogIndex = -1;  // the menu's lesson this replays or re-records; -1: the user's own
  QString boxTitle;       // the lesson box's extra item for a live recording ("" otherwise)
};

struct LoadedLesson {
  LessonRequest request;  // as asked, a lesson file's run, kind, rank and words filled in
  Lesson lesson;
  std::string runConfig;  // the run's config JSON (the bucket view names its cap)
  Lesson compared;        // lesson 2's twin, when request.compareRun names one
  QString compareError;   // why the twin cannot be shown; empty when it can (or none asked)
  QString title;          // a lesson file's title; empty otherwise
  std::vector<int> stops;
  std::map<int, QString> narration;
};

// Lesson `index` of the menu (0-based), from its shipped recording; nullopt with *error
// when there is no such lesson or the recordings are not installed.
std::optional<LessonRequest> requestMenuLesson(int index, QString* error);
// A lesson file (*.ddplesson); its run is read beside it.
LessonRequest requestLessonFile(const QString& path);
// Any run file with a recorded distributed pass or DDP iterations.
LessonRequest requestRun(const QString& path);
// A live re-recording `run` of menu lesson `index`.
LessonRequest requestLiveRecording(int index, const QString& run);
// What a link names (lesson_link.h); nullopt with *error when its file is not on this machine.
std::optional<LessonRequest> requestLink(const LessonLink& link, QString* error);

// Reads what `request` names: nullopt with *error in the user's words when a file cannot
// be read or the run holds no such lesson. Plain file reading: safe off the UI thread.
std::optional<LoadedLesson> readLesson(const LessonRequest& request, QString* error);

}  // namespace ddpscope::gui
