#include "lesson_show.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

namespace ddpscope::apps {
namespace {

namespace fs = std::filesystem;

struct ShowArgs {
  std::string lesson;
  int step = -1;
  bool json = false;
};

// Replaces this process with ddpscope-lesson: its output and exit status are the command's.
int run_lesson_program(std::vector<std::string> args) {
  std::error_code ec;
  const fs::path helper = fs::read_symlink("/proc/self/exe", ec).parent_path() / "ddpscope-lesson";
  if (ec || !fs::is_regular_file(helper)) {
    std::cerr << "error: lessons are shown by ddpscope-lesson, which is built with the app (DDPSCOPE_WITH_GUI=ON) "
                 "and installed beside ddpscope-cli; it is not at "
              << helper.string() << "\n";
    return 2;
  }
  args.insert(args.begin(), helper.string());
  std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(helper.c_str(), argv.data());
  std::cerr << "error: could not run " << helper.string() << ": " << std::strerror(errno) << "\n";
  return 2;
}

}  // namespace

std::function<int()> add_lesson_show_commands(CLI::App& lesson) {
  auto args = std::make_shared<ShowArgs>();
  CLI::App* show = lesson.add_subcommand(
      "show", "What a lesson's step shows without a window: its state, its words and its counters (for handouts)");
  show->add_option("LESSON", args->lesson,
                   "A lesson's number (as the Learn menu, links and --lesson number them), a lesson file (.ddplesson) "
                   "or a run file")
      ->required();
  show->add_option("--step", args->step, "The state after this many steps (0: before the first; default: every step)")
      ->check(CLI::Range(0, 1 << 30));
  show->add_flag("--json", args->json,
                 "As JSON: for a ring, each rank's blocks as the ranks summed in them (blocks) and its steps sent "
                 "so far (sent_steps); for the other lessons, what their views draw");
  CLI::App* list = lesson.add_subcommand("list", "The lessons, by the numbers `lesson show`, links and --lesson use");
  return [show, list, args]() -> int {
    if (list->parsed()) return run_lesson_program({"list"});
    if (!show->parsed()) return -1;
    std::vector<std::string> a = {"show", args->lesson};
    if (args->step >= 0) a.insert(a.end(), {"--step", std::to_string(args->step)});
    if (args->json) a.push_back("--json");
    return run_lesson_program(a);
  };
}

}  // namespace ddpscope::apps
