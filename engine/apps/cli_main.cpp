// ddpscope-cli: the terminal entry point. `train` runs a training job in this process
// and shows its progress.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "job_launcher.h"
#include "progress_reporter.h"
#include "tensor/blas_kernels.h"
#include "tensor/error.h"
#include "train_cli_options.h"
#include "trainer.h"

namespace {

int run_train(ddpscope::apps::TrainOptions options, const ddpscope::apps::LaunchOptions& launch) {
  using namespace ddpscope::apps;
  const int64_t log_every = launch.log_every;
  if (launch.np > 0) {
    validate_and_complete(options);  // fail here, not in N ranks at once
    return JobLauncher(launch).run(options, isatty(STDOUT_FILENO) == 1);
  }
  DDPSCOPE_CHECK(launch.backend == "mpi" && launch.hostfile.empty(),
                 "--backend and --hostfile apply to multi-rank jobs; add --np N");
  Trainer trainer(std::move(options));
  std::printf("training %s for %lld iterations\n", trainer.describe().c_str(),
              static_cast<long long>(trainer.options().iters));
  std::fflush(stdout);
  ProgressReporter progress(trainer.options().iters, isatty(STDOUT_FILENO) == 1, log_every);
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

}  // namespace

int main(int argc, char** argv) {
  ddpscope::reexec_with_preferred_blas_core(argv);
  CLI::App app{"ddpscope: distributed training engine and debugger"};
  app.require_subcommand(1);
  ddpscope::apps::TrainOptions options;
  ddpscope::apps::LaunchOptions launch;
  CLI::App* train = app.add_subcommand("train", "Train a model and show progress");
  ddpscope::apps::add_train_options(*train, options, launch);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (train->parsed()) return run_train(options, launch);
  } catch (const ddpscope::Error& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.message().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 2;
  }
  return 0;
}
