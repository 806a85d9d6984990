#include "train_cli_options.h"

#include "ddpscope/bucket_rule.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <sstream>

namespace ddpscope::apps {
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

// An option whose text a parser of ours reads: its errors reported like every other bad
// option's.
CLI::Option* add_parsed_option(CLI::App& cmd, const char* name, TrainOptions& o,
                               void (*parse)(const std::string&, TrainOptions&), const char* help) {
  return cmd.add_option_function<std::string>(
      name,
      [&o, parse](const std::string& text) {
        try {
          parse(text, o);
        } catch (const Error& e) {
          throw CLI::ValidationError(e.message());
        }
      },
      help);
}

void add_model_options(CLI::App& cmd, TrainOptions& o) {
  cmd.add_option("--model", o.model, "Model to train")
      ->check(CLI::IsMember({"mlp", "transformer"}))
      ->capture_default_str();
  cmd.add_option("--iters", o.iters, "Training iterations")->check(at_least(1))->capture_default_str();
  cmd.add_option("--batch", o.batch, "Samples per iteration")->check(at_least(1))->capture_default_str();
  cmd.add_option("--width", o.width, "MLP hidden width, or transformer d_model")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--depth", o.depth, "MLP Linear layers, or transformer blocks")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--heads", o.heads, "Transformer attention heads")->check(at_least(1))->capture_default_str();
  cmd.add_option("--context", o.context, "Transformer sequence length")->check(at_least(2))->capture_default_str();
  cmd.add_option("--data", o.data, "mlp: regression|classification|digits; transformer: corpus");
  cmd.add_option("--data-path", o.data_path, "digits.csv(.gz) or a text file (default: the shipped one)");
  cmd.add_option("--seed", o.seed, "Seed for initialisation and data")->check(at_least(0))->capture_default_str();
  cmd.add_option("--optimizer", o.optimizer, "sgd|adam|adamw (default: sgd for mlp, adamw for transformer)")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  cmd.add_option("--lr", o.lr, "Learning rate (default depends on model and optimizer)")->check(non_negative_real());
  cmd.add_option("--momentum", o.momentum, "SGD momentum")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  cmd.add_option("--weight-decay", o.weight_decay, "Weight decay")->check(non_negative_real());
  cmd.add_option("--threads", o.threads, "CPU threads for the math")->check(at_least(1))->capture_default_str();
  cmd.add_option("--save", o.save_path, "Write the trained model's state dict to this file");
}

void add_ddp_options(CLI::App& cmd, TrainOptions& o) {
  cmd.add_option("--bucket-cap-mb", o.bucket_cap_mb, "DDP bucket size cap in MiB")
      ->check(non_negative_real())
      ->capture_default_str();
  cmd.add_flag("--measure-allreduce", o.measure_allreduce,
               "After training, time allreduces from 64 KiB to the gradient's size on the job's hosts "
               "(recorded in the run file for `ddpscope-cli advise`)");
  cmd.add_flag("--measure-links", o.measure_links,
               "Before training, time an exchange between each pair of neighbouring ranks and of hosts: "
               "the links' ceiling that `ddpscope-cli links` and the bandwidth figures read against");
  cmd.add_option("--first-bucket-cap-mb", o.first_bucket_cap_mb,
                 "DDP: the first bucket's cap in MiB (as PyTorch, 1: the first allreduce starts early)")
      ->check(non_negative_real())
      ->capture_default_str();
  cmd.add_flag("--find-unused-parameters", o.find_unused_parameters, "DDP: find parameters the forward did not use");
  cmd.add_flag("--gradient-as-bucket-view", o.gradient_as_bucket_view,
               "DDP: gradients are views into the buckets (no copy)");
  cmd.add_flag("--static-graph", o.static_graph, "DDP: the same parameters are used in every iteration");
  cmd.add_flag("--fused-optimizer", o.fused_optimizer,
               "DDP: step each bucket's parameters as soon as its allreduce is done, while later buckets "
               "are still reducing (PyTorch's _register_fused_optim); the same result as one step after "
               "backward, with the optimizer hidden behind communication");
  cmd.add_flag("--zero", o.zero,
               "Multi-rank: ZeroRedundancyOptimizer; each rank keeps the optimizer state of its shard of the "
               "parameters only, steps that shard and broadcasts it to the others");
  cmd.add_flag("--zero-overlap", o.zero_overlap,
               "--zero, with each bucket's shard stepped and sent as soon as DDP has reduced that bucket, while "
               "later buckets are still reducing (PyTorch's overlap_with_ddp)");
  cmd.add_flag("--batch-norm", o.batch_norm, "MLP: a BatchNorm1d after each hidden Linear");
  cmd.add_flag("--sync-bn", o.sync_bn,
               "MLP, multi-rank: SyncBatchNorm (batch statistics over every rank's samples); implies --batch-norm");
  cmd.add_option("--comm-hook", o.comm_hook, "DDP: how buckets are reduced")
      ->check(CLI::IsMember({"allreduce", "fp16", "bf16", "powersgd"}))
      ->capture_default_str();
}

// The faults to inject are left out of `train --help` (an empty group), which names them
// in one line: the help stays one screen.
constexpr const char* kFaultsGroup = "";

// What only a job of several ranks has: a parameter server, faults to inject, join.
void add_multi_rank_options(CLI::App& cmd, TrainOptions& o) {
  cmd.add_flag("--remote-embedding", o.remote_embedding,
               "Transformer, --np 2 or more: rank 0 holds the token table as a parameter server; "
               "the other ranks train the rest with DDP, through RPC and distributed autograd");
  cmd.add_option("--inject-unused", o.unused_rank,
                 "RANK: that rank's MLP leaves its second layer out, so those parameters get no "
                 "gradient there (to see why DDP without --find-unused-parameters hangs)")
      ->check(at_least(0))
      ->group(kFaultsGroup);
  add_parsed_option(cmd, "--inject-stall", o, parse_stall,
                    "RANK:ITERATION:SECONDS: that rank sleeps between forward and backward (to see what a "
                    "hang looks like)")
      ->group(kFaultsGroup);
  add_parsed_option(cmd, "--inject-slow", o, parse_slow,
                    "RANK:PHASE:MS: that rank sleeps MS in every iteration, in PHASE: outside_step (before "
                    "the iteration, as a slow input pipeline), forward, backward (backward@LAYER: when that "
                    "layer's gradient arrives, e.g. 1:backward@layers.1:20) or optimizer (to see what a slow "
                    "rank does to the others); :FROM_ITERATION after MS: slow from that iteration on")
      ->group(kFaultsGroup);
  add_parsed_option(cmd, "--inject-uneven", o, parse_uneven,
                    "RANK:ITERATIONS: that rank's data runs out after ITERATIONS (uneven inputs: without --join "
                    "the other ranks wait for it in their next allreduce)")
      ->group(kFaultsGroup);
  cmd.add_option("--inject-model-mismatch", o.mismatch_rank,
                 "RANK: that rank builds a slightly larger model (MLP one unit wider, transformer one "
                 "block deeper), to see DDP refuse replicas that differ")
      ->check(at_least(0))
      ->group(kFaultsGroup);
  cmd.add_flag("--join", o.join,
               "DDP: a rank whose data runs out early shadows the others' allreduces until all are "
               "done (PyTorch's join), so uneven inputs finish; the loss shown is rank 0's own");
  cmd.add_flag("--join-throw", o.join_throw,
               "--join, but every rank stops as soon as one runs out of data (PyTorch's "
               "throw_on_early_termination); needed with --sync-bn");
  cmd.add_flag("!--no-overlap", o.overlap,
               "Multi-rank: allreduce all gradients after backward instead of DDP's overlapped buckets");
}

void add_launch_options(CLI::App& cmd, LaunchOptions& launch) {
  cmd.add_option("--np", launch.np, "Ranks to launch under mpirun (0: train in this process)")
      ->check(at_least(0))
      ->capture_default_str();
  cmd.add_option("--hostfile", launch.hostfile, "mpirun hostfile for ranks on several hosts")->check(CLI::ExistingFile);
  cmd.add_option("--collector-address", launch.collector_address,
                 "Address the ranks reach the run's collector on, for hosts with several interfaces "
                 "(default: $DDPSCOPE_COLLECTOR_ADDRESS, else with --hostfile the address this host's route to its "
                 "hosts leaves from)");
  cmd.add_option("--backend", launch.backend, "Process-group backend")
      ->check(CLI::IsMember({"mpi", "nccl"}))
      ->capture_default_str();
  cmd.add_option("--log-every", launch.log_every, "Iterations between progress lines when not on a terminal")
      ->check(at_least(1))
      ->capture_default_str();
  cmd.add_option("--out", launch.out, "Run file for the probes' events (default: a new file in the workspace folder)");
  cmd.add_flag("--force", launch.force, "Replace the run that the --out file already holds");
  cmd.add_flag("--oversubscribe", launch.oversubscribe,
               "Allow more than 4 ranks per core of this machine; with --hostfile, more ranks than its slots (up to 4 "
               "per slot)");
  cmd.add_flag("!--no-probes", launch.probes, "Record nothing and write no run file");
  cmd.add_option("--progress", launch.progress,
                 "auto (a bar on a terminal, lines otherwise), bar, lines, or json "
                 "('@ddpscope {...}' lines for programs)")
      ->check(CLI::IsMember({"auto", "bar", "lines", "json"}))
      ->capture_default_str();
}

}  // namespace

void add_rpc_transport_option(CLI::App& cmd) {
  cmd.add_option_function<std::string>(
         "--rpc-transport", [](const std::string& kind) { ::setenv("DDPSCOPE_RPC_TRANSPORT", kind.c_str(), 1); },
         "RPC between the workers: shm (shared memory on one host, TCP between hosts; the default), tcp, or zmq "
         "(ZeroMQ); default $DDPSCOPE_RPC_TRANSPORT, else shm")
      ->check(CLI::IsMember({"shm", "tcp", "zmq"}));
}

void add_train_options(CLI::App& cmd, TrainOptions& o, LaunchOptions& launch) {
  add_model_options(cmd, o);
  add_ddp_options(cmd, o);
  add_multi_rank_options(cmd, o);
  add_launch_options(cmd, launch);
  add_rpc_transport_option(cmd);  // --remote-embedding jobs use RPC
}

nlohmann::json options_json(const TrainOptions& o, const LaunchOptions& launch) {
  return {{"model", o.model},
          {"data", o.data},
          {"iters", o.iters},
          {"batch", o.batch},
          {"width", o.width},
          {"depth", o.depth},
          {"heads", o.heads},
          {"context", o.context},
          {"seed", o.seed},
          {"optimizer", o.optimizer},
          {"lr", o.lr},
          {"momentum", o.momentum},
          {"weight_decay", o.weight_decay},
          {"threads", o.threads},
          {"overlap", o.overlap},
          {run_settings::kBucketCapMb, o.bucket_cap_mb},
          {run_settings::kFirstBucketCapMb, o.first_bucket_cap_mb},
          {"measure_allreduce", o.measure_allreduce},
          {"measure_links", o.measure_links},
          {"find_unused_parameters", o.find_unused_parameters},
          {"gradient_as_bucket_view", o.gradient_as_bucket_view},
          {"static_graph", o.static_graph},
          {run_settings::kFusedOptimizer, o.fused_optimizer},
          {"comm_hook", o.comm_hook},
          {"remote_embedding", o.remote_embedding},
          {"unused_rank", o.unused_rank},
          {"mismatch_rank", o.mismatch_rank},
          {"uneven_rank", o.uneven_rank},
          {"uneven_iters", o.uneven_iters},
          {"join", o.join},
          {"join_throw", o.join_throw},
          {"zero", o.zero},
          {"zero_overlap", o.zero_overlap},
          {"batch_norm", o.batch_norm},
          {"sync_bn", o.sync_bn},
          {"np", launch.np},
          {"backend", launch.backend},
          {"hostfile", launch.hostfile}};
}

std::vector<std::string> train_arguments(const TrainOptions& o, const LaunchOptions& launch) {
  auto num = [](auto v) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
  };
  std::vector<std::string> a = {
      "--model",   o.model,        "--iters",   num(o.iters),   "--batch",     num(o.batch),
      "--width",   num(o.width),   "--depth",   num(o.depth),   "--heads",     num(o.heads),
      "--context", num(o.context), "--seed",    num(o.seed),    "--momentum",  num(o.momentum),
      "--threads", num(o.threads), "--backend", launch.backend, "--log-every", num(launch.log_every)};
  if (!o.data.empty()) a.insert(a.end(), {"--data", o.data});
  if (!o.data_path.empty()) a.insert(a.end(), {"--data-path", o.data_path});
  if (!o.optimizer.empty()) a.insert(a.end(), {"--optimizer", o.optimizer});
  if (o.lr != 0) a.insert(a.end(), {"--lr", num(o.lr)});
  if (o.weight_decay != 0) a.insert(a.end(), {"--weight-decay", num(o.weight_decay)});
  if (!o.save_path.empty()) a.insert(a.end(), {"--save", o.save_path});
  a.insert(a.end(), {"--bucket-cap-mb", num(o.bucket_cap_mb), "--first-bucket-cap-mb", num(o.first_bucket_cap_mb)});
  if (o.measure_allreduce) a.push_back("--measure-allreduce");
  if (o.measure_links) a.push_back("--measure-links");
  if (o.find_unused_parameters) a.push_back("--find-unused-parameters");
  if (o.gradient_as_bucket_view) a.push_back("--gradient-as-bucket-view");
  if (o.static_graph) a.push_back("--static-graph");
  if (o.fused_optimizer) a.push_back("--fused-optimizer");
  if (o.comm_hook != "allreduce") a.insert(a.end(), {"--comm-hook", o.comm_hook});
  if (!o.overlap) a.push_back("--no-overlap");
  if (o.remote_embedding) a.push_back("--remote-embedding");
  if (o.unused_rank >= 0) a.insert(a.end(), {"--inject-unused", num(o.unused_rank)});
  if (o.mismatch_rank >= 0) a.insert(a.end(), {"--inject-model-mismatch", num(o.mismatch_rank)});
  if (o.uneven_rank >= 0) a.insert(a.end(), {"--inject-uneven", detail::concat(o.uneven_rank, ":", o.uneven_iters)});
  if (o.join) a.push_back("--join");
  if (o.join_throw) a.push_back("--join-throw");
  if (o.zero) a.push_back("--zero");
  if (o.zero_overlap) a.push_back("--zero-overlap");
  if (o.batch_norm) a.push_back("--batch-norm");
  if (o.sync_bn) a.push_back("--sync-bn");
  if (o.slow_rank >= 0)
    a.insert(a.end(), {"--inject-slow",
                       detail::concat(o.slow_rank, ":", o.slow_phase, o.slow_layer.empty() ? "" : "@" + o.slow_layer,
                                      ":", num(o.slow_ms), ":", o.slow_from)});
  if (o.stall_rank >= 0) {
    a.insert(a.end(),
             {"--inject-stall", detail::concat(o.stall_rank, ":", o.stall_iteration, ":", num(o.stall_seconds))});
  }
  return a;
}

}  // namespace ddpscope::apps
