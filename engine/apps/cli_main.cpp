// ddpscope-cli: the terminal entry point, one subcommand per job. Running jobs: `train` (in
// this process, or N ranks under mpirun), `torchrun` and `collect` (PyTorch scripts),
// `rpc-ping`, `example`. Reading a run: `stats`, `why`, `hang`, `links`, `advise`, `compare`.
// Files in and out: `import-torch`, `export`, `lesson`. docs/cli.md lists them for users.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <optional>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "chrome_trace_export.h"
#include "kineto_export.h"
#include "collect_command.h"
#include "compare_command.h"
#include "lesson_make.h"
#include "flight_grid.h"
#include "flight_import.h"
#include "hang_analysis.h"
#include "hang_report_json.h"
#include "hang_processes.h"
#include "stacks_request.h"
#include "hang_stacks.h"
#include "job_launcher.h"
#include "probe.h"
#include "probe_session.h"
#include "progress_reporter.h"
#include "bucket_advice.h"
#include "dist_examples.h"
#include "rpc_ping.h"
#include "run_file_claim.h"
#include "run_compare.h"
#include "run_stats.h"
#include "run_stats_text.h"
#include "links_command.h"
#include "why_command.h"
#include "advise_command.h"
#include "torch_trace_import.h"
#include "run_store_reader.h"
#include "run_workspace.h"
#include "tensor/blas_kernels.h"
#include "ddpscope/error.h"
#include "ddpscope/regular_file.h"
#include "torchrun_launch.h"
#include "train_cli_options.h"
#include "trainer.h"

namespace {

int train_in_process(ddpscope::apps::TrainOptions options, ddpscope::apps::ProgressStyle style, int64_t log_every);

int run_stats(const std::string& path, bool summary_only, bool json) {
  ddpscope::probes::RunStoreReader run(path);
  nlohmann::ordered_json stats = ddpscope::probes::run_stats_json(run);
  if (!json) {
    std::printf("%s", ddpscope::probes::run_stats_text(stats, summary_only).c_str());
    return 0;
  }
  if (summary_only) {
    stats.erase("iterations");
    stats.erase("buckets");
    if (stats["gpu"].is_object()) stats["gpu"].erase("iterations");
  }
  std::printf("%s\n", stats.dump(2).c_str());
  return 0;
}

// The grid of collectives around each group's finding (flight_grid.h).
void print_flight_grids(const ddpscope::probes::HangReport& report) {
  for (const auto& g : report.flight.groups) {
    if (g.verdict.empty()) continue;
    std::printf("\n%s", ddpscope::probes::flight_grid_text(ddpscope::probes::flight_grid(report.records, g)).c_str());
  }
}

bool is_run_file(const std::string& path) {
  if (!ddpscope::why_not_regular_file(path, "run file").empty()) return false;  // fopen of a pipe blocks
  char header[16] = {};
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  const size_t n = std::fread(header, 1, sizeof header, f);
  std::fclose(f);
  return n >= 15 && std::memcmp(header, "SQLite format 3", 15) == 0;
}

// The dumps `hang` was given, folders expanded; the files of a folder that are not dumps
// are named on stderr with the reason.
std::vector<std::string> flight_dump_inputs(const std::vector<std::string>& paths) {
  std::vector<std::string> skipped;
  std::vector<std::string> dumps = ddpscope::probes::flight_dump_inputs(paths, &skipped);
  for (const auto& s : skipped)
    std::fprintf(stderr, "skipped %s\n", s.c_str());
  return dumps;
}

// `hang DUMP... | FOLDER`: the verdict from flight-recorder dumps alone, one per rank.
int run_hang_dumps(const std::vector<std::string>& paths, bool json, bool all_frames) {
  const auto report = ddpscope::probes::analyze_hang(ddpscope::probes::read_flight_dumps(flight_dump_inputs(paths)));
  if (json) {
    std::printf("%s\n", ddpscope::probes::hang_report_json(report).dump(2).c_str());
    return 0;
  }
  if (report.verdict.empty()) std::printf("every collective matched on every rank, and each completed\n");
  for (const auto& line : report.findings)
    std::printf("%s\n", line.c_str());
  print_flight_grids(report);
  // The call stacks the records of the finding's collective keep.
  for (const auto& capture : report.stacks)
    std::printf("\n%s", ddpscope::probes::stack_text(capture, all_frames, 0).c_str());
  return 0;
}

int run_hang(const std::vector<std::string>& paths, bool json, bool all_frames, bool ask) {
  if (paths.size() > 1 || std::filesystem::is_directory(paths.front()) ||
      (!is_run_file(paths.front()) && ddpscope::probes::looks_like_flight_dump(paths.front()))) {
    for (const auto& p : paths)
      if (is_run_file(p))
        throw DDPSCOPE_ERROR(
            "hang takes one run file alone, or flight-recorder dumps (files or a folder, one dump "
            "per rank); '",
            p, "' is a run file given with other files");
    if (ask)
      throw DDPSCOPE_ERROR(
          "hang --ask asks a running job's ranks, through the run file it records; flight-recorder "
          "dumps cannot be asked");
    return run_hang_dumps(paths, json, all_frames);
  }
  if (!std::filesystem::is_directory(paths.front()) && !is_run_file(paths.front())) {
    // One file that is neither: say both, since either was meant.
    const std::string why = ddpscope::probes::why_not_flight_dump(paths.front());
    if (!why.empty())
      throw DDPSCOPE_ERROR("'", paths.front(), "' is not a ddpscope run file (not an SQLite database), nor a ",
                           "flight-recorder dump: ", why);
  }
  if (ask) {
    const auto answer = ddpscope::apps::ask_for_stacks(paths.front());
    std::fprintf(stderr, "asked %d ranks for their stacks: %d answered in %.1f s\n", answer.asked, answer.answered,
                 answer.seconds);
  }
  ddpscope::probes::RunStoreReader run(paths.front());
  // A job still running is judged at this moment (the run's clock is this host's
  // CLOCK_MONOTONIC when its collector runs here), not at its latest event.
  const bool live = run.run().status == "running";
  auto report = ddpscope::probes::analyze_hang(run, live ? ddpscope::probes::now_ns() : 0);
  if (live) {  // ranks stopped or gone cannot answer: their processes say so
    const auto ranks = run.ranks();
    ddpscope::probes::add_unanswering_ranks(report, ranks, ddpscope::probes::rank_process_states(ranks));
  }
  if (json) {
    std::printf("%s\n", ddpscope::probes::hang_report_json(report).dump(2).c_str());
    return 0;
  }
  for (const auto& line : report.findings)
    std::printf("%s\n", line.c_str());
  for (const auto& st : report.ranks) {
    if (st.current_iteration > 0 || st.completed_iterations > 0)
      std::printf("rank %d: iteration %lld (%s)", st.rank, static_cast<long long>(st.current_iteration),
                  ddpscope::probes::hang_phase_words(st.phase));
    else
      std::printf("rank %d: no iterations recorded", st.rank);
    if (st.blocked_in) {
      std::printf(", in %s #%lld", st.blocked_in->op.c_str(), static_cast<long long>(st.blocked_in->seq));
    }
    // DDP's buckets, where the run knows them (a run made of PyTorch's dumps does not).
    if (st.params_total > 0)
      std::printf(", buckets waiting for gradients: %zu, for their allreduce: %zu, gradients missing: %zu of %lld",
                  st.buckets_waiting_for_grads.size(), st.buckets_waiting_for_allreduce.size(), st.missing_grads.size(),
                  static_cast<long long>(st.params_total));
    std::printf("\n");
  }
  print_flight_grids(report);
  // Where each rank's code stood at its latest capture (PyTorch ranks, schema 12).
  for (const auto& capture : report.stacks)
    std::printf("\n%s", ddpscope::probes::stack_text(capture, all_frames, report.start_ns).c_str());
  return 0;
}

int run_export(const std::string& path, const std::string& chrome) {
  // The trace is written over `chrome`: never over a run (the one exported, or another).
  std::error_code ec;
  DDPSCOPE_CHECK(!std::filesystem::equivalent(path, chrome, ec),
                 "--chrome names the run file itself; writing the trace there would destroy the run. Choose "
                 "another name (e.g. ",
                 path, ".json)");
  if (FILE* existing = std::fopen(chrome.c_str(), "rb")) {
    char header[16] = {};
    const size_t n = std::fread(header, 1, sizeof header, existing);
    std::fclose(existing);
    DDPSCOPE_CHECK(n < 15 || std::memcmp(header, "SQLite format 3", 15) != 0, "--chrome '", chrome,
                   "' is a database (a run file?), not a trace; it is left untouched. Choose another name");
  }
  ddpscope::probes::RunStoreReader run(path);
  const int64_t n = ddpscope::probes::export_chrome_trace(run, chrome);
  std::printf("wrote %lld trace events to %s (open it in https://ui.perfetto.dev)\n", static_cast<long long>(n),
              chrome.c_str());
  return 0;
}

// `export --kineto`: one PyTorch profiler trace per rank.
int run_export_kineto(const std::string& path, const std::string& dir, bool force) {
  ddpscope::probes::RunStoreReader run(path);
  const auto r = ddpscope::probes::export_kineto_traces(run, dir, force);
  std::printf(
      "wrote %zu traces (%lld events) into %s: open them with TensorBoard's profiler, Holistic Trace "
      "Analysis or Perfetto, or import them again with ddpscope-cli import-torch %s\n",
      r.files.size(), static_cast<long long>(r.events), dir.c_str(), dir.c_str());
  return 0;
}

// `import-torch`: a PyTorch job's profiler traces as one run file, with progress on
// the terminal (a line that rewrites itself on a terminal, a line per quarter elsewhere).
int run_import_flight_dumps(const std::vector<std::string>& inputs, const std::string& out, bool force) {
  const auto r = ddpscope::probes::import_flight_dumps(inputs, out, force);
  std::printf("imported %zu rank%s' flight-recorder dumps (world size %d), %lld records, into %s\n", r.ranks.size(),
              r.ranks.size() == 1 ? "" : "s", r.world_size, static_cast<long long>(r.records), out.c_str());
  for (const auto& n : r.notes)
    std::printf("note: %s\n", n.c_str());
  std::printf("verdict: ddpscope-cli hang %s\n", out.c_str());
  return 0;
}

int run_import_torch(const std::vector<std::string>& inputs, const std::string& out, bool force,
                     const std::vector<std::string>& rank_of_file) {
  // Dumps or traces: told by reading each file as far as it takes (PyTorch's dumps say so
  // at their first key); a folder is dumps when any file in it is one.
  std::vector<std::string> dump_files, others;
  for (const auto& p : inputs) {
    if (std::filesystem::is_directory(p)) {
      std::vector<std::string> skipped;
      const auto found = ddpscope::probes::dumps_in_folder(p, &skipped);
      if (found.empty()) {
        others.push_back(p);  // a folder of traces
        continue;
      }
      dump_files.insert(dump_files.end(), found.begin(), found.end());
      for (const auto& why : skipped)
        std::fprintf(stderr, "skipped %s\n", why.c_str());
    } else if (ddpscope::probes::looks_like_flight_dump(p)) {
      dump_files.push_back(p);
    } else {
      others.push_back(p);
    }
  }
  if (!dump_files.empty()) {
    if (!others.empty()) {
      throw DDPSCOPE_ERROR("import-torch: '", others.front(), "' is not a flight-recorder dump (",
                           ddpscope::probes::why_not_flight_dump(others.front()), ") but '", dump_files.front(),
                           "' is; import the dumps and the profiler traces into separate run files");
    }
    return run_import_flight_dumps(dump_files, out, force);
  }
  const bool tty = isatty(fileno(stderr));
  int last_quarter = -1;
  ddpscope::probes::TorchImportOptions options{.force = force};
  for (const auto& given : rank_of_file) {
    // FILE=N; the last '=' splits, so a file name may hold one.
    const auto eq = given.rfind('=');
    char* end = nullptr;
    const long n = eq == std::string::npos ? -1 : std::strtol(given.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || !end || *end != '\0' || end == given.c_str() + eq + 1 || n < 0 ||
        n > 1'000'000)
      throw DDPSCOPE_ERROR("import-torch: --rank '", given,
                           "' is not FILE=N (a trace file and its rank, 0 to 1000000)");
    options.ranks[given.substr(0, eq)] = static_cast<int>(n);
  }
  options.progress = [&](double fraction, const std::string& what) {
    if (tty) {
      std::fprintf(stderr, "\rimport-torch: %3d%% %-40s", static_cast<int>(fraction * 100), what.c_str());
    } else if (static_cast<int>(fraction * 4) > last_quarter) {
      last_quarter = static_cast<int>(fraction * 4);
      std::fprintf(stderr, "import-torch: %d%% %s\n", last_quarter * 25, what.c_str());
    }
    return true;
  };
  const auto r = ddpscope::probes::import_torch_traces(inputs, out, options);
  if (tty) std::fprintf(stderr, "\n");
  std::printf("imported %zu rank%s (world size %d), %lld events, into %s\n", r.ranks.size(),
              r.ranks.size() == 1 ? "" : "s", r.world_size, static_cast<long long>(r.events), out.c_str());
  for (const auto& c : r.clocks) {
    if (c.kept)
      std::printf("rank %d: clock as ddpscope exported it (+/- %.3f ms)\n", c.rank,
                  std::max<int64_t>(c.uncertainty_ns, 0) / 1e6);
    else if (c.uncertainty_ns >= 0)
      std::printf("rank %d: clock offset %+.3f ms +/- %.3f ms (%d collectives)\n", c.rank, c.offset_ns / 1e6,
                  c.uncertainty_ns / 1e6, c.matched_collectives);
  }
  for (const auto& n : r.notes)
    std::printf("note: %s\n", n.c_str());
  std::printf("summary: ddpscope-cli stats %s --summary\n", out.c_str());
  return 0;
}

// The checks a launch makes before anything starts, without starting anything: what the
// desktop app runs before it launches a job, so a bad option is refused with the CLI's
// own words.
void check_launch(ddpscope::apps::TrainOptions& options, const ddpscope::apps::LaunchOptions& launch) {
  using namespace ddpscope::apps;
  DDPSCOPE_CHECK(!options.remote_embedding || launch.np >= 2,
                 "--remote-embedding needs a parameter server and at least one trainer: add --np 2 "
                 "or more (--np 3: one server, two DDP trainers)");
  DDPSCOPE_CHECK(!options.remote_embedding || launch.backend == "mpi",
                 "--remote-embedding runs on the CPU (mpi backend); drop --backend ", launch.backend);
  // A rank named by an --inject-* option must be one the job has.
  const std::pair<const char*, int> injected[] = {{"--inject-unused", options.unused_rank},
                                                  {"--inject-stall", options.stall_rank},
                                                  {"--inject-slow", options.slow_rank},
                                                  {"--inject-uneven", options.uneven_rank},
                                                  {"--inject-model-mismatch", options.mismatch_rank}};
  for (const auto& [flag, rank] : injected) {
    DDPSCOPE_CHECK(rank < 0 || (launch.np >= 2 && rank < launch.np), flag, " names rank ", rank, " but the job ",
                   launch.np >= 2 ? ddpscope::detail::concat("has ranks 0 to ", launch.np - 1)
                                  : std::string("is not a multi-rank job (add --np 2 or more)"));
  }
  if (launch.np > 0) {
    validate_and_complete(options);  // fail here, not in N ranks at once
    JobLauncher checks(launch);      // its constructor checks the launch itself
    return;
  }
  DDPSCOPE_CHECK(launch.backend == "mpi" && launch.hostfile.empty(),
                 "--backend and --hostfile apply to multi-rank jobs; add --np N");
  validate_and_complete(options);
}

int check_train(ddpscope::apps::TrainOptions options, const ddpscope::apps::LaunchOptions& launch) {
  check_launch(options, launch);
  std::printf("ok\n");
  return 0;
}

int run_train(ddpscope::apps::TrainOptions options, const ddpscope::apps::LaunchOptions& launch) {
  using namespace ddpscope::apps;
  const int64_t log_every = launch.log_every;
  check_launch(options, launch);
  if (launch.np > 0) return JobLauncher(launch).run(options, progress_style(launch.progress));
  // The claim outlives the session (declared first): closing its descriptor must come
  // after SQLite's own, or it would drop SQLite's locks on the file.
  std::unique_ptr<ddpscope::probes::RunFileClaim> claim;
  std::unique_ptr<ddpscope::probes::ProbeSession> probes;
  std::string path;
  if (launch.probes) {
    claim = ddpscope::probes::claim_run_file(launch.out, launch.force);
    path = claim->path();
    probes = std::make_unique<ddpscope::probes::ProbeSession>(ddpscope::probes::ProbeSessionOptions{
        .rank = 0, .run_file = path, .run = {options_json(options, launch).dump(), 1, "none", options.model}});
    ddpscope::probes::set_thread_name("compute");
    std::printf("run file: %s\n", path.c_str());
  }
  try {
    const int code = train_in_process(std::move(options), progress_style(launch.progress), log_every);
    if (probes) {
      probes->finish("finished");
      std::printf("summary: ddpscope-cli stats %s\n", path.c_str());
    }
    return code;
  } catch (const std::exception& e) {
    const auto* ours = dynamic_cast<const ddpscope::Error*>(&e);
    if (probes) probes->finish("failed", ours ? ours->message() : e.what(), 0);  // no source location
    throw;
  }
}

int train_in_process(ddpscope::apps::TrainOptions options, ddpscope::apps::ProgressStyle style, int64_t log_every) {
  using namespace ddpscope::apps;
  Trainer trainer(std::move(options));
  std::printf("training %s for %lld iterations\n", trainer.describe().c_str(),
              static_cast<long long>(trainer.options().iters));
  std::fflush(stdout);
  ProgressReporter progress(trainer.options().iters, style, log_every);
  const auto start = std::chrono::steady_clock::now();
  double rate = 0;
  for (int64_t i = 0; i < trainer.options().iters; ++i) {
    const StepResult r = trainer.step();
    const double now = static_cast<double>(trainer.samples_per_step()) / std::max(r.seconds, 1e-9);
    rate = i == 0 ? now : 0.9 * rate + 0.1 * now;  // smoothed for a steady display
    progress.update(r.iteration, r.loss, rate);
  }
  progress.finish(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (!trainer.options().save_path.empty()) {
    std::printf("saved the model to %s\n", trainer.options().save_path.c_str());
  }
  return 0;
}

// A subcommand and what runs it once its options are parsed. Its options live as long as
// the action (CLI11 writes into them).
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_train(CLI::App& app) {
  struct Args {
    ddpscope::apps::TrainOptions options;
    ddpscope::apps::LaunchOptions launch;
    bool check_only = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* train = app.add_subcommand("train", "Train a model and show progress");
  ddpscope::apps::add_train_options(*train, a->options, a->launch);
  train->add_flag("--check", a->check_only,
                  "Check the options (the same checks as a launch) and exit: 0 and 'ok' when "
                  "they are valid; nothing runs and no file is written");
  return {train, [a] { return a->check_only ? check_train(a->options, a->launch) : run_train(a->options, a->launch); }};
}

Command add_stats(CLI::App& app) {
  struct Args {
    std::string run;
    bool summary_only = false;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* stats = app.add_subcommand(
      "stats", "A run's time per rank: iteration, compute, communication, exposed communication, overlap");
  stats->add_option("RUN", a->run, "Run file")->required()->check(CLI::ExistingFile);
  stats->add_flag("--summary", a->summary_only, "Only the run, its ranks and per-rank means (no per-iteration rows)");
  stats->add_flag("--json", a->json, "Print JSON (with buckets, GPU time and every straggler)");
  return {stats, [a] { return run_stats(a->run, a->summary_only, a->json); }};
}

Command add_hang(CLI::App& app) {
  struct Args {
    std::vector<std::string> paths;
    bool json = false;
    bool all_frames = false;
    bool ask = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* hang = app.add_subcommand(
      "hang",
      "Where each rank stands and who stalled the job: from a run file, or from flight-recorder dumps (PyTorch's "
      "JSON dumps, one per rank)");
  hang->add_option("RUN", a->paths,
                   "A run file, or flight-recorder dumps (one per rank: PyTorch's JSON or pickle, files or a folder)")
      ->required()
      ->check(CLI::ExistingPath);
  hang->add_flag("--json", a->json,
                 "Print JSON: the verdict, each rank's position, each group's finding, each rank's latest stack");
  hang->add_flag("--all-frames", a->all_frames,
                 "List every thread's frames, libraries' too (by default: the training thread's own code)");
  hang->add_flag("--ask", a->ask,
                 "A running job: ask every rank for its threads' stacks now (SIGUSR2 to its launcher), then judge");
  return {hang, [a] { return run_hang(a->paths, a->json, a->all_frames, a->ask); }};
}

Command add_advise(CLI::App& app) {
  struct Args {
    std::string run;
    std::vector<double> caps;
    int rank = 0;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* advise =
      app.add_subcommand("advise", "Predict iteration time and overlap for other bucket caps from one recorded run");
  advise->add_option("RUN", a->run, "Run file of a DDP training job")->required()->check(CLI::ExistingFile);
  advise->add_option("--caps", a->caps, "Caps to predict, in MiB (default: 0.25 to 100 and the recorded one)")
      ->check(CLI::Range(1e-6, 1e6))
      ->delimiter(',');
  advise->add_option("--rank", a->rank, "The rank whose timings to use")->check(CLI::Range(0, 1 << 20));
  advise->add_flag("--json", a->json, "Print JSON");
  return {advise, [a] { return ddpscope::apps::run_advise(a->run, a->caps, a->rank, a->json); }};
}

Command add_import_torch(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs, ranks;
    std::string out;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* import_torch = app.add_subcommand("import-torch",
                                              "Import a PyTorch job's profiler traces (one per rank, or a folder), or "
                                              "its flight-recorder dumps, as a run file");
  import_torch
      ->add_option("PATH", a->inputs,
                   "Trace files (*.json, *.json.gz) or folders of them; or flight-recorder dumps (one per rank)")
      ->required();
  import_torch->add_option("--out", a->out, "Run file to write")->required();
  import_torch->add_flag("--force", a->force, "Replace --out if it exists");
  import_torch->add_option("--rank", a->ranks,
                           "FILE=N: the rank of a trace whose header and name do not say it (repeat for each file)");
  return {import_torch, [a] { return run_import_torch(a->inputs, a->out, a->force, a->ranks); }};
}

Command add_export(CLI::App& app) {
  struct Args {
    std::string run, chrome, kineto;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* exporter = app.add_subcommand("export", "Export a run for other tools");
  exporter->add_option("RUN", a->run, "Run file")->required()->check(CLI::ExistingFile);
  CLI::Option* chrome = exporter->add_option("--chrome", a->chrome, "Write a Chrome trace / Perfetto JSON file");
  CLI::Option* kineto = exporter->add_option(
      "--kineto", a->kineto,
      "Write PyTorch profiler traces (Kineto's form, one rank<R>.pt.trace.json per rank) into this folder");
  chrome->excludes(kineto);
  exporter->add_flag("--force", a->force, "With --kineto: replace rank files already in the folder");
  return {exporter, [a] {
            DDPSCOPE_CHECK(!a->chrome.empty() || !a->kineto.empty(),
                           "export needs --chrome FILE (Perfetto, chrome://tracing) or --kineto DIR (PyTorch's "
                           "profiler form: TensorBoard, Holistic Trace Analysis, import-torch)");
            return a->kineto.empty() ? run_export(a->run, a->chrome) : run_export_kineto(a->run, a->kineto, a->force);
          }};
}

Command add_rpc_ping(CLI::App& app) {
  struct Args {
    ddpscope::apps::RpcPingOptions ping;
    ddpscope::apps::LaunchOptions launch;
  };
  auto a = std::make_shared<Args>();
  a->launch.np = 2;
  CLI::App* rpc_ping =
      app.add_subcommand("rpc-ping", "Check the RPC path of a cluster: round-trip latency and echo throughput");
  rpc_ping->add_option("--np", a->launch.np, "Workers (ranks under mpirun)")->check(CLI::Range(1, 4096));
  rpc_ping->add_option("--hostfile", a->launch.hostfile, "mpirun hostfile for a multi-host job")
      ->check(CLI::ExistingFile);
  rpc_ping->add_option("--bytes", a->ping.bytes, "Size of the throughput tensor in bytes")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 32));
  rpc_ping->add_option("--calls", a->ping.calls, "Small round trips per peer")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  rpc_ping
      ->add_option("--echo-bytes", a->ping.echo_bytes,
                   "Time round trips that echo a tensor of this many bytes (default: a 3x3 f32 add)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 32));
  rpc_ping->add_option("--out", a->launch.out, "Record the job's RPC messages into this run file");
  ddpscope::apps::add_rpc_transport_option(*rpc_ping);
  rpc_ping->add_flag("--force", a->launch.force, "Replace the run that the --out file already holds");
  rpc_ping->add_flag("--oversubscribe", a->launch.oversubscribe, "Allow more than 4 workers per core of this machine");
  rpc_ping->add_flag("--json", a->ping.json, "Print one JSON object (median_round_trip_us, throughput_mb_s, per peer)");
  return {rpc_ping, [a] {
            a->launch.probes = !a->launch.out.empty();
            const nlohmann::json config = {
                {"job", "rpc-ping"}, {"np", a->launch.np}, {"bytes", a->ping.bytes}, {"calls", a->ping.calls}};
            return ddpscope::apps::JobLauncher(a->launch).run_mode(ddpscope::apps::rpc_ping_arguments(a->ping), config,
                                                                   "rpc-ping");
          }};
}

// `script_args`: what follows the script on the command line (split off before parsing).
Command add_torchrun(CLI::App& app, std::vector<std::string> script_args) {
  struct Args {
    ddpscope::apps::TorchrunOptions torchrun;
    ddpscope::apps::LaunchOptions launch;
    bool check_only = false;
  };
  auto a = std::make_shared<Args>();
  a->launch.np = 1;         // torchrun's --nproc-per-node default
  a->launch.log_every = 1;  // a script's iterations are few and slow
  a->torchrun.script_args = std::move(script_args);
  CLI::App* cmd =
      app.add_subcommand("torchrun",
                         "Run an unchanged PyTorch script as torchrun would, recorded and followed live (DDP buckets, "
                         "gradients, collectives, hangs)");
  ddpscope::apps::add_torchrun_options(*cmd, a->torchrun, a->launch);
  cmd->add_flag("--check", a->check_only,
                "Check the options (the interpreter, the script, the ranks) and exit: 0 and 'ok' when they are "
                "valid; nothing runs and no file is written");
  return {cmd, [a] {
            using namespace ddpscope::apps;
            return a->check_only ? check_torchrun(a->torchrun, a->launch)
                                 : run_torchrun(a->torchrun, a->launch, progress_style(a->launch.progress));
          }};
}

int run_example(const ddpscope::apps::ExampleOptions& example, const ddpscope::apps::LaunchOptions& launch) {
  DDPSCOPE_CHECK(launch.probes || launch.out.empty(),
                 "--out names the run file and --no-probes asks for none; drop one of them");
  DDPSCOPE_CHECK((example.name != "chain" && example.name != "rref") || launch.np >= 3, "example ", example.name,
                 " passes through three workers; use --np 3 or more");
  const nlohmann::json config = {
      {"job", "example"}, {"example", example.name}, {"np", launch.np}, {"mode", example.mode}, {"seed", example.seed}};
  return ddpscope::apps::JobLauncher(launch).run_mode(ddpscope::apps::example_arguments(example), config,
                                                      "example " + example.name);
}

Command add_example(CLI::App& app) {
  struct Args {
    ddpscope::apps::ExampleOptions example;
    ddpscope::apps::LaunchOptions launch;
  };
  auto a = std::make_shared<Args>();
  a->launch.np = 3;
  auto& example = a->example;
  auto& launch = a->launch;
  CLI::App* cmd = app.add_subcommand(
      "example",
      "Run a distributed autograd example (seed, chain, rref, unused-rpc, parameter-server) or the ring allreduce "
      "(ring) as a real job");
  cmd->add_option("NAME", example.name, "The example")
      ->required()
      ->check(CLI::IsMember(ddpscope::apps::example_names()));
  cmd->add_option("--np", launch.np, "Workers (ranks under mpirun); chain and rref need 3")->check(CLI::Range(2, 4096));
  cmd->add_option("--hostfile", launch.hostfile, "mpirun hostfile for a multi-host job")->check(CLI::ExistingFile);
  cmd->add_option("--collector-address", launch.collector_address,
                  "Address the ranks reach the run's collector on (multi-host jobs)");
  cmd->add_option("--seed", example.seed, "Seed of the example's inputs")->check(CLI::NonNegativeNumber);
  cmd->add_option("--mode", example.mode, "Distributed backward mode: fast (seed 000) or smart")
      ->check(CLI::IsMember({"fast", "smart"}));
  cmd->add_option("--repeat", example.repeat, "Worker 0 also times this many forward + backward runs (median_us)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  cmd->add_option("--out", launch.out, "Run file for the job's events (default: a new file in the workspace folder)");
  cmd->add_flag("--oversubscribe", launch.oversubscribe, "Allow more than 4 workers per core of this machine");
  cmd->add_flag("--force", launch.force, "Replace the run that the --out file already holds");
  cmd->add_flag("!--no-probes", launch.probes, "Record nothing and write no run file");
  cmd->add_flag("--json", example.json, "Every worker prints one JSON line: worker, inputs, gradients (nested lists)");
  ddpscope::apps::add_rpc_transport_option(*cmd);
  return {cmd, [a] { return run_example(a->example, a->launch); }};
}

// One example under each command's --help, as a user would type it.
void add_examples(CLI::App& app) {
  static const std::pair<const char*, const char*> examples[] = {
      {"stats", "ddpscope-cli stats --summary job.ddprun"},
      {"hang", "ddpscope-cli hang job.ddprun   (or PyTorch's flight dumps: ddpscope-cli hang dumps/)"},
      {"advise", "ddpscope-cli advise job.ddprun --caps 1,4,25"},
      {"compare", "ddpscope-cli compare before.ddprun after.ddprun --fail-above 5   (exit 1 on a 5% slowdown)"},
      {"import-torch", "ddpscope-cli import-torch traces/ --out job.ddprun"},
      {"export", "ddpscope-cli export job.ddprun --chrome job.json"},
      {"rpc-ping", "ddpscope-cli rpc-ping --np 2 --hostfile hosts"},
      {"example", "ddpscope-cli example chain --np 3"},
      {"torchrun",
       "ddpscope-cli torchrun --np 2 --out job.ddprun train.py --epochs 2   (what follows SCRIPT is its own)"},
      {"lesson", "ddpscope-cli lesson list"},
      {"collect", "ddpscope-cli collect --expect 2 --out job.ddprun"},
  };
  for (const auto& [name, example] : examples)
    app.get_subcommand(name)->footer(std::string("Example:\n  ") + example);
  app.get_subcommand("train")->footer(
      "Faults on purpose: --inject-stall R:ITER:SECONDS, --inject-slow R:PHASE:MS, --inject-uneven R:ITERS, "
      "--inject-unused R, --inject-model-mismatch R\n"
      "Example:\n  ddpscope-cli train --np 2 --model transformer --iters 200 --out job.ddprun");
  // Wide enough for `--first-bucket-cap-mb FLOAT:>=0=1` and its kind: one line an option.
  app.get_formatter()->column_width(40);
  app.footer(
      "Example:\n  ddpscope-cli train --np 2 --out job.ddprun && ddpscope-cli stats job.ddprun\n"
      "Each command's own: ddpscope-cli COMMAND --help");
  CLI::App* lesson = app.get_subcommand("lesson");
  lesson->get_subcommand("make")->footer(
      "Example:\n  ddpscope-cli lesson make job.ddprun --title \"Our DDP job\" --stop 5");
  lesson->get_subcommand("show")->footer("Example:\n  ddpscope-cli lesson show 4 --step 2");
  lesson->get_subcommand("list")->footer("Example:\n  ddpscope-cli lesson list");
}

// CLI11 says only "A subcommand is required" for a misspelt one.
bool known_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return true;
  std::string names;
  bool known = false;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    known = known || sub->get_name() == argv[1];
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (!known)
    std::fprintf(stderr, "error: unknown command '%s'; the commands are %s (ddpscope-cli --help)\n", argv[1],
                 names.c_str());
  return known;
}

}  // namespace

int main(int argc, char** argv) {
  ddpscope::reexec_with_preferred_blas_core(argv);
  CLI::App app{"ddpscope: distributed training engine and debugger"};
  app.require_subcommand(1);
  // torchrun: what follows the script is the script's, even words that look like ours.
  std::vector<std::string> script_args;
  int parsed_argc = argc;
  if (argc > 2 && std::strcmp(argv[1], "torchrun") == 0) {
    const std::vector<std::string> rest(argv + 2, argv + argc);
    const size_t script = ddpscope::apps::torchrun_script_position(rest);
    if (script < rest.size()) {
      script_args.assign(rest.begin() + static_cast<std::ptrdiff_t>(script) + 1, rest.end());
      parsed_argc = static_cast<int>(script) + 3;
    }
  }
  const std::vector<Command> commands = {
      add_train(app),    add_stats(app),        add_hang(app),
      add_advise(app),   add_import_torch(app), add_export(app),
      add_rpc_ping(app), add_example(app),      add_torchrun(app, std::move(script_args))};
  CLI::App* lesson = nullptr;
  const std::function<int()> run_lesson = ddpscope::apps::add_lesson_command(app, &lesson);
  CLI::App* collect = nullptr;
  const std::function<int()> run_collect = ddpscope::apps::add_collect_command(app, &collect);
  CLI::App* compare = nullptr;
  const std::function<int()> run_compare = ddpscope::apps::add_compare_command(app, &compare);
  CLI::App* why = nullptr;
  const std::function<int()> run_why = ddpscope::apps::add_why_command(app, &why);
  CLI::App* links = nullptr;
  const std::function<int()> run_links = ddpscope::apps::add_links_command(app, &links);
  add_examples(app);
  if (!known_command(app, argc, argv)) return 2;
  try {
    app.parse(parsed_argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const Command& c : commands)
      if (c.app->parsed()) return c.run();
    if (lesson->parsed()) return run_lesson();
    if (collect->parsed()) return run_collect();
    if (compare->parsed()) return run_compare();
    if (why->parsed()) return run_why();
    if (links->parsed()) return run_links();
  } catch (const ddpscope::Error& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.message().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 2;
  }
  return 0;
}
