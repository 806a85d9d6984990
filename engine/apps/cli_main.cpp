// ddpscope-cli: the terminal entry point. `train` runs a training job in this process
// and shows its progress.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "progress_reporter.h"
#include "tensor/blas_kernels.h"
#include "tensor/error.h"
#include "trainer.h"

namespace {

// CLI11's own numeric validators print the type's whole range; this one says plainly
// what is wrong with the value.
CLI::Validator at_least(long long minimum) {
  return CLI::Validator(
      [minimum](std::string& text) -> std::string {
        size_t used = 0;
        long long value = 0;
        try {
          value = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size()) return "expected a whole number, got '" + text + "'";
        if (value < minimum) return "must be at least " + std::to_string(minimum) + ", got " + text;
        return {};
      },
      ">=" + std::to_string(minimum));
}

CLI::Validator non_negative_real() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        size_t used = 0;
        double value = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size()) return "expected a number, got '" + text + "'";
        if (!(value >= 0)) return "must not be negative, got " + text;
        return {};
      },
      ">=0");
}

void add_train_options(CLI::App& cmd, ddpscope::apps::TrainOptions& o, int64_t& log_every) {
  cmd.add_option("--model", o.model, "Model to train")
      ->check(CLI::IsMember({"mlp", "transformer"}))
      ->capture_default_str();
  cmd.add_option("--iters", o.iters, "Training iterations")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--batch", o.batch, "Samples per iteration")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--width", o.width, "MLP hidden width, or transformer d_model")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--depth", o.depth, "MLP Linear layers, or transformer blocks")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--heads", o.heads, "Transformer attention heads")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--context", o.context, "Transformer sequence length")
      ->check(at_least(2))
      ->capture_default_str();
  cmd.add_option("--data", o.data, "mlp: regression|classification|digits; transformer: corpus");
  cmd.add_option("--data-path", o.data_path,
                 "digits.csv(.gz) or a text file (default: the shipped one)");
  cmd.add_option("--seed", o.seed, "Seed for initialisation and data")->capture_default_str();
  cmd.add_option("--optimizer", o.optimizer,
                 "sgd|adam|adamw (default: sgd for mlp, adamw for transformer)")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  cmd.add_option("--lr", o.lr, "Learning rate (default depends on model and optimizer)")
      ->check(non_negative_real());
  cmd.add_option("--momentum", o.momentum, "SGD momentum")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd.add_option("--weight-decay", o.weight_decay, "Weight decay")->check(non_negative_real());
  cmd.add_option("--threads", o.threads, "CPU threads for the math")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--save", o.save_path, "Write the trained model's state dict to this file");
  cmd.add_option("--log-every", log_every,
                 "Iterations between progress lines when not on a terminal")
      ->check(at_least(1))
      ->capture_default_str();
}

int run_train(ddpscope::apps::TrainOptions options, int64_t log_every) {
  using namespace ddpscope::apps;
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
  int64_t log_every = 10;
  CLI::App* train = app.add_subcommand("train", "Train a model and show progress");
  add_train_options(*train, options, log_every);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (train->parsed()) return run_train(options, log_every);
  } catch (const ddpscope::Error& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.message().c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 2;
  }
  return 0;
}
