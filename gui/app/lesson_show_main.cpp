// ddpscope-lesson: a lesson's steps without a window, for `ddpscope-cli lesson show`
// and `lesson list` (the CLI runs this program: lessons live with the app, above the
// engine). What a step shows comes from lesson_report.h, the same state the Learn tab
// draws.
//
//   ddpscope-lesson list
//   ddpscope-lesson show LESSON [--step K] [--json]
//
// LESSON: a lesson's number (as the Learn menu, links and --lesson number it), a lesson
// file (.ddplesson) or a run file.
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <CLI/CLI.hpp>
#include <iostream>

#include "ddpscope/error.h"
#include "lesson_catalog.h"
#include "lesson_file.h"
#include "lesson_loader.h"
#include "lesson_report.h"
#include "run_store_reader.h"

using namespace ddpscope::gui;

namespace {

struct Chosen {
  std::string title, run;
  std::string kind;  // lesson_kind.h's name, or "": the first the run holds
  int rank = 0;
  std::map<int, std::string> narration;  // a lesson file's own words, by step from 1
};

bool allDigits(const std::string& s) {
  return !s.empty() && s.size() < 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Chosen choose(const std::string& lesson) {
  Chosen c;
  if (allDigits(lesson)) {
    const int n = std::stoi(lesson);
    const auto& list = lessons();
    if (n < 1 || n > static_cast<int>(list.size()))
      throw std::runtime_error("there is no lesson " + lesson + ": the lessons are 1 to " +
                               std::to_string(list.size()) + " (ddpscope-cli lesson list)");
    const LessonInfo& info = list[static_cast<size_t>(n - 1)];
    if (lessonsDir().isEmpty())
      throw std::runtime_error("the shipped lessons are not installed here (set DDPSCOPE_LESSONS_DIR to their folder)");
    c.title = info.title.toStdString();
    c.run = (lessonsDir() + "/" + info.file).toStdString();
    c.kind = info.ddp ? "ddp" : "";
    c.rank = info.rank;
    return c;
  }
  if (QFileInfo(QString::fromStdString(lesson)).suffix() == "ddplesson") {
    const ddpscope::probes::LessonFile file = ddpscope::probes::read_lesson_file(lesson);
    const QFileInfo at(QString::fromStdString(lesson));
    const QString run = QString::fromStdString(file.run);
    c.title = file.title;
    c.run = (QFileInfo(run).isAbsolute() ? run : at.absoluteDir().filePath(run)).toStdString();
    c.kind = file.kind;
    c.rank = file.rank;
    c.narration = file.narration;
    return c;
  }
  c.title = QFileInfo(QString::fromStdString(lesson)).fileName().toStdString();
  c.run = lesson;
  return c;
}

// A lesson file's words as a terminal may print them: control characters (escape
// sequences that clear or retitle the screen, NULs) become '?', line ends stay.
std::string printable(std::string text) {
  for (char& ch : text)
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') || ch == 0x7f) ch = '?';
  return text;
}

int show(const std::string& lesson_arg, int step, bool json) {
  const Chosen c = choose(lesson_arg);
  ddpscope::probes::RunStoreReader run(c.run);
  std::string why;
  const Lesson lesson = loadRunLesson(run, c.kind, c.rank, why);
  if (lesson.steps.empty()) throw std::runtime_error(why);
  const size_t n = lesson.steps.size();
  if (step > static_cast<int>(n))
    throw std::runtime_error("--step " + std::to_string(step) + ": the lesson has " + std::to_string(n) +
                             " steps (0 is before the first)");
  const auto one = [&](size_t k) {
    nlohmann::json j = lessonStepJson(lesson, k);
    if (const auto own = c.narration.find(static_cast<int>(k)); own != c.narration.end()) j["narration"] = own->second;
    return j;
  };
  if (json) {
    nlohmann::json out = {{"title", c.title}, {"kind", lessonKind(lesson)}, {"steps", n}};
    if (step >= 0) {
      out["step"] = one(static_cast<size_t>(step));
      std::cout << out.dump(1) << "\n";
      return 0;
    }
    // Every step, one at a time: the document is never whole in memory.
    std::string head = out.dump(1);
    head.pop_back();  // the closing brace
    std::cout << head << ",\n \"each_step\": [\n";
    for (size_t k = 0; k <= n; ++k)
      std::cout << (k ? ",\n" : "") << one(k).dump();
    std::cout << "\n ]\n}\n";
    return 0;
  }
  std::cout << printable(c.title) << " (" << n << " steps)\n\n";
  const auto print = [&](size_t k) {
    std::string text = lessonStepText(lesson, k);
    if (const auto own = c.narration.find(static_cast<int>(k)); own != c.narration.end()) {
      const size_t line = text.find('\n');
      const size_t end = text.find('\n', line + 1);
      text = text.substr(0, line + 1) + own->second + text.substr(end);
    }
    std::cout << printable(text) << "\n";
  };
  if (step >= 0) {
    print(static_cast<size_t>(step));
  } else {
    for (size_t k = 1; k <= n; ++k)
      print(k);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);  // the shipped lessons are found beside the program
  CLI::App cli{"A lesson's steps without a window: what each step shows and says"};
  cli.require_subcommand(1);
  CLI::App* list = cli.add_subcommand("list", "The lessons, by the numbers the Learn menu and links use");
  CLI::App* show_cmd = cli.add_subcommand("show", "What a lesson's step shows: its state, words and counters");
  std::string lesson;
  int step = -1;
  bool json = false;
  show_cmd->add_option("LESSON", lesson, "A lesson's number, a lesson file (.ddplesson) or a run file")->required();
  show_cmd->add_option("--step", step, "The state after this many steps (0: before the first; default: every step)")
      ->check(CLI::Range(0, 1 << 30));
  show_cmd->add_flag("--json", json,
                     "As JSON: for a ring, each rank's blocks as the ranks summed in them "
                     "(blocks) and its steps sent so far (sent_steps)");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e);
  }
  try {
    if (list->parsed()) {
      int n = 0;
      for (const LessonInfo& info : lessons())
        std::cout << ++n << ". " << info.title.toStdString() << "\n";
      return 0;
    }
    return show(lesson, step, json);
  } catch (const ddpscope::Error& e) {
    std::cerr << "error: " << e.message() << "\n";  // the source location stays out of what users see
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << ddpscope::user_message(e) << "\n";
    return 2;
  }
}
