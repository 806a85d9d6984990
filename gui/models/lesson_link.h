// A link to a step of a lesson, as the Learn tab shares it ("Copy link to this step"):
//   ddpscope:learn?lesson=4&step=12&side=1&predict=1&zoom=1.5     a lesson of the Learn menu
//   ddpscope:learn?file=/home/t/ring.ddplesson&step=3              a lesson file
//   ddpscope:learn?run=/home/t/job.ddprun&step=40                  a run replayed as a lesson
// The desktop entry registers the ddpscope: scheme; `ddpscope --open-link LINK` opens one
// from a shell. A link comes from outside (a chat, a web page): parse() checks every
// part and refuses what it does not know how to open, saying what is wrong.
#pragma once

#include <QString>
#include <optional>

namespace ddpscope::gui {

struct LessonLink {
  enum class Source { Builtin, File, Run };
  Source source = Source::Builtin;
  int lesson = 0;  // Builtin: 0-based index into lessons() (the link counts from 1, as the menu)
  QString path;    // File, Run: an absolute path
  int step = 0;    // steps taken
  bool sideBySide = false;
  bool predict = false;
  double zoom = 0;  // the graph's scale; 0: fitted

  QString toString() const;
  // Nullopt with *error set when `text` is not a link this app can open (another scheme,
  // an unknown lesson, a relative path, a file of another kind, a number out of range).
  static std::optional<LessonLink> parse(const QString& text, int lessonCount, QString* error);
  bool operator==(const LessonLink&) const = default;
};

}  // namespace ddpscope::gui
