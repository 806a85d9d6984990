#include "lesson_make.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "ddpscope/error.h"
#include "lesson_file.h"
#include "lesson_show.h"
#include "run_store_reader.h"
#include "ddpscope/plural.h"

namespace ddpscope::apps {
namespace {

namespace fs = std::filesystem;

struct MakeArgs {
  std::string run, out, title, about, kind;
  int rank = 0;
  std::vector<int> stops;
  std::vector<std::string> narration;  // STEP:TEXT
  bool force = false;
};

// What the run holds to replay: a distributed autograd pass, else the rank's DDP steps.
std::string replayable_kind(probes::RunStoreReader& run, int rank) {
  for (const auto& g : run.graph_index())
    if (g.ctx_id >= 0) return "autograd";
  const auto ready = run.spans({.kinds = {probes::Kind::GradReady}, .rank = rank, .limit = 1});
  if (!ready.empty()) return "ddp";
  if (!run.spans({.kinds = {probes::Kind::RingStep}, .limit = 1}).empty()) return "ring";
  return {};
}

int make_lesson(const MakeArgs& a) {
  probes::RunStoreReader run(a.run);
  const int world = run.run().world_size;
  if (a.rank < 0 || (world > 0 && a.rank >= world))
    throw DDPSCOPE_ERROR("--rank ", a.rank, ": the run has ", count_of(world, "rank"), ", 0 to ", world - 1);
  const std::string found = replayable_kind(run, a.rank);
  if (found.empty())
    throw DDPSCOPE_ERROR("'", a.run, "' holds no distributed autograd pass, no DDP gradients on rank ", a.rank,
                         " and no ring allreduce steps: nothing to replay (record one with ddpscope-cli example NAME, "
                         "or train)");
  if (!a.kind.empty() && a.kind != found)
    throw DDPSCOPE_ERROR("--kind ", a.kind, ": the run holds ", found, " steps to replay, not ", a.kind);
  probes::LessonFile l;
  l.kind = found;
  l.rank = a.rank;
  l.title = a.title.empty() ? fs::path(a.run).stem().string() : a.title;
  l.about = a.about;
  for (int s : a.stops) {
    if (s < 1) throw DDPSCOPE_ERROR("--stop ", s, ": steps are counted from 1, as the Learn tab shows them");
    l.stops.push_back(s);
  }
  std::sort(l.stops.begin(), l.stops.end());
  l.stops.erase(std::unique(l.stops.begin(), l.stops.end()), l.stops.end());
  for (const std::string& n : a.narration) {
    const size_t colon = n.find(':');
    int step = 0;
    try {
      step = colon == std::string::npos ? 0 : std::stoi(n.substr(0, colon));
    } catch (const std::exception&) {
    }
    if (step < 1 || colon + 1 >= n.size())
      throw DDPSCOPE_ERROR("--narrate '", n,
                           "': expected STEP:TEXT, the step counted from 1, e.g. --narrate '12:Bucket 0 is full'");
    l.narration[step] = n.substr(colon + 1);
  }
  fs::path out = a.out.empty() ? fs::path(a.run).replace_extension(probes::kLessonFileSuffix) : fs::path(a.out);
  if (out.extension() != probes::kLessonFileSuffix)
    throw DDPSCOPE_ERROR("--out '", out.string(), "': a lesson file ends in ", probes::kLessonFileSuffix);
  if (fs::exists(out) && !a.force)
    throw DDPSCOPE_ERROR("'", out.string(), "' exists; --force replaces it, or choose another --out");
  // The run named from the lesson's folder: the two travel together.
  l.run = fs::absolute(a.run).lexically_relative(fs::absolute(out).parent_path()).string();
  if (l.run.empty()) l.run = fs::absolute(a.run).string();
  probes::write_lesson_file(out.string(), l);
  std::printf("lesson: %s (%s of %s, %s, %s)\n", out.string().c_str(),
              l.kind == "ddp"    ? "DDP iterations"
              : l.kind == "ring" ? "a ring allreduce's steps"
                                 : "a distributed autograd pass",
              a.run.c_str(), count_of(static_cast<int64_t>(l.stops.size()), "stop").c_str(),
              count_of(static_cast<int64_t>(l.narration.size()), "narrated step").c_str());
  std::printf("open it in the app: ddpscope %s (or Learn > Open a lesson file...)\n", out.string().c_str());
  return 0;
}

}  // namespace

std::function<int()> add_lesson_command(CLI::App& app, CLI::App** lesson) {
  *lesson =
      app.add_subcommand("lesson", "Lessons: make one from a run of your own, list them, show a step without a window");
  (*lesson)->require_subcommand(1);
  auto args = std::make_shared<MakeArgs>();
  CLI::App* make = (*lesson)->add_subcommand(
      "make", "Write a lesson file (.ddplesson) that replays RUN, with a title, words, stops and narration");
  make->add_option("RUN", args->run, "The run file to replay")->required()->check(CLI::ExistingFile);
  make->add_option("--out", args->out, "The lesson file (default: beside RUN, RUN's name with .ddplesson)");
  make->add_option("--title", args->title, "The lesson's title (default: the run's name)");
  make->add_option("--about", args->about, "The words shown above the lesson: what to watch for");
  make->add_option("--kind", args->kind, "What to replay when the run holds both")
      ->check(CLI::IsMember({"autograd", "ddp", "ring"}));
  make->add_option("--rank", args->rank, "A DDP lesson's rank (default 0)");
  make->add_option("--stop", args->stops, "A step where Play stops (repeat it), counted from 1");
  make->add_option("--narrate", args->narration,
                   "STEP:TEXT, the words shown at that step instead of the app's (repeat it)");
  make->add_flag("--force", args->force, "Replace the lesson file if it exists");
  const std::function<int()> show = add_lesson_show_commands(**lesson);
  return [make, args, show] {
    if (make->parsed()) return make_lesson(*args);
    const int status = show();
    return status >= 0 ? status : 2;
  };
}

}  // namespace ddpscope::apps
