#include "trainer.h"

#include "fault_injection.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "autograd/graph_snapshot.h"
#include "autograd/ops.h"
#include "cpu_wait.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp/powersgd_hook.h"
#include "ddp/sync_batch_norm.h"
#include "nn/models.h"
#include "probe.h"
#include "records.h"
#include "tensor/threads.h"

namespace ddpscope::apps {
namespace {

// The built-in comm hooks by the name the CLI and the desktop app's launch dialog use.
void register_comm_hook(ddp::DistributedDataParallel& model, const std::string& hook,
                        const std::shared_ptr<c10d::ProcessGroup>& group) {
  if (hook == "allreduce") return;  // the reducer's default
  if (hook == "fp16") {
    model.register_comm_hook(ddp::fp16_compress_hook(group));
  } else if (hook == "bf16") {
    model.register_comm_hook(ddp::bf16_compress_hook(group));
  } else if (hook == "powersgd") {
    model.register_comm_hook(ddp::powersgd_hook(std::make_shared<ddp::PowerSgdState>(group, ddp::PowerSgdOptions{})));
  }
}

}  // namespace

void parse_stall(const std::string& text, TrainOptions& o) {
  int rank = -1;
  long long iteration = 0;
  double seconds = 0;
  char tail = 0;
  DDPSCOPE_CHECK(std::sscanf(text.c_str(), "%d:%lld:%lf%c", &rank, &iteration, &seconds, &tail) == 3 && rank >= 0 &&
                     iteration >= 1 && seconds > 0,
                 "--inject-stall: expected RANK:ITERATION:SECONDS (e.g. 1:5:30), got '", text, "'");
  o.stall_rank = rank;
  o.stall_iteration = iteration;
  o.stall_seconds = seconds;
}

void parse_slow(const std::string& text, TrainOptions& o) {
  std::vector<std::string> parts;
  for (size_t from = 0;;) {
    const size_t colon = text.find(':', from);
    parts.push_back(text.substr(from, colon == std::string::npos ? std::string::npos : colon - from));
    if (colon == std::string::npos) break;
    from = colon + 1;
  }
  int rank = -1;
  double ms = 0;
  long long first = 1;
  char tail = 0;
  std::string phase = parts.size() >= 3 ? parts[1] : std::string();
  std::string layer;
  if (const auto at = phase.find('@'); at != std::string::npos) {  // backward@LAYER
    layer = phase.substr(at + 1);
    phase = phase.substr(0, at);
    DDPSCOPE_CHECK(phase == "backward" && !layer.empty(),
                   "--inject-slow: only backward takes a layer (backward@LAYER, e.g. 1:backward@layers.1:20), got '",
                   text, "'");
  }
  const bool known = phase == "outside_step" || phase == "forward" || phase == "backward" || phase == "optimizer";
  DDPSCOPE_CHECK((parts.size() == 3 || parts.size() == 4) && std::sscanf(parts[0].c_str(), "%d%c", &rank, &tail) == 1 &&
                     std::sscanf(parts[2].c_str(), "%lf%c", &ms, &tail) == 1 &&
                     (parts.size() == 3 || std::sscanf(parts[3].c_str(), "%lld%c", &first, &tail) == 1) && rank >= 0 &&
                     ms > 0 && ms <= 600'000 && known && first >= 1,
                 "--inject-slow: expected RANK:PHASE:MS[:FROM_ITERATION] with PHASE one of outside_step, forward, "
                 "backward, backward@LAYER, optimizer, MS from 0 to 600000 and FROM_ITERATION at least 1 (e.g. "
                 "1:forward:20, or 1:forward:20:100 from iteration 100 on), got '",
                 text, "'");
  o.slow_rank = rank;
  o.slow_phase = phase;
  o.slow_layer = layer;
  o.slow_ms = ms;
  o.slow_from = first;
}

void parse_uneven(const std::string& text, TrainOptions& o) {
  int rank = -1;
  long long iterations = 0;
  char tail = 0;
  DDPSCOPE_CHECK(std::sscanf(text.c_str(), "%d:%lld%c", &rank, &iterations, &tail) == 2 && rank >= 0 && iterations >= 1,
                 "--inject-uneven: expected RANK:ITERATIONS with ITERATIONS at least 1 (e.g. 1:20), got '", text, "'");
  o.uneven_rank = rank;
  o.uneven_iters = iterations;
}

ddp::DdpOptions ddp_options_of(const TrainOptions& o) {
  return {.bucket_cap_mb = o.bucket_cap_mb,
          .first_bucket_cap_mb = o.first_bucket_cap_mb,
          .find_unused_parameters = o.find_unused_parameters,
          .gradient_as_bucket_view = o.gradient_as_bucket_view,
          .static_graph = o.static_graph};
}

void validate_and_complete(TrainOptions& o) {
  DDPSCOPE_CHECK(o.model == "mlp" || o.model == "transformer", "--model: unknown model '", o.model,
                 "'; choose mlp or transformer");
  DDPSCOPE_CHECK(o.iters >= 1, "--iters must be at least 1, got ", o.iters);
  DDPSCOPE_CHECK(o.batch >= 1, "--batch must be at least 1, got ", o.batch);
  DDPSCOPE_CHECK(o.width >= 1, "--width must be at least 1, got ", o.width);
  DDPSCOPE_CHECK(o.depth >= 1, "--depth must be at least 1, got ", o.depth);
  DDPSCOPE_CHECK(o.threads >= 1, "--threads must be at least 1, got ", o.threads);
  DDPSCOPE_CHECK(o.lr >= 0, "--lr must not be negative, got ", o.lr);
  DDPSCOPE_CHECK(o.bucket_cap_mb > 0, "--bucket-cap-mb must be positive, got ", o.bucket_cap_mb);
  DDPSCOPE_CHECK(o.first_bucket_cap_mb > 0, "--first-bucket-cap-mb must be positive, got ", o.first_bucket_cap_mb);
  DDPSCOPE_CHECK(
      o.comm_hook == "allreduce" || o.comm_hook == "fp16" || o.comm_hook == "bf16" || o.comm_hook == "powersgd",
      "--comm-hook: unknown hook '", o.comm_hook, "'; choose allreduce, fp16, bf16 or powersgd");
  if (o.model == "mlp") {
    if (o.data.empty()) o.data = "regression";
    DDPSCOPE_CHECK(o.data == "regression" || o.data == "classification" || o.data == "digits",
                   "--data: the mlp trains on regression, classification or digits, not '", o.data, "'");
    DDPSCOPE_CHECK(o.data_path.empty() || o.data == "digits", "--data-path reads a digits file; --data ", o.data,
                   " is generated and reads none: drop --data-path, or add --data digits");
    DDPSCOPE_CHECK(o.data_path.empty() || std::filesystem::is_regular_file(o.data_path), "--data-path: cannot open '",
                   o.data_path, "': no such file");
    if (o.optimizer.empty()) o.optimizer = "sgd";
    if (o.lr == 0) o.lr = o.optimizer == "sgd" ? 0.05 : 1e-3;
  } else {
    if (o.data.empty()) o.data = "corpus";
    DDPSCOPE_CHECK(o.data == "corpus", "--data: the transformer trains on the text corpus, not '", o.data, "'");
    DDPSCOPE_CHECK(o.data_path.empty() || std::filesystem::is_regular_file(o.data_path), "--data-path: cannot open '",
                   o.data_path, "': no such file");
    DDPSCOPE_CHECK(o.width % o.heads == 0, "--width ", o.width, " must be divisible by --heads ", o.heads);
    DDPSCOPE_CHECK(o.context >= 2, "--context must be at least 2, got ", o.context);
    if (o.optimizer.empty()) o.optimizer = "adamw";
    if (o.lr == 0) o.lr = o.optimizer == "sgd" ? 0.1 : 3e-3;
  }
  DDPSCOPE_CHECK(o.optimizer == "sgd" || o.optimizer == "adam" || o.optimizer == "adamw",
                 "--optimizer: unknown optimizer '", o.optimizer, "'; choose sgd, adam or adamw");
  DDPSCOPE_CHECK(!o.remote_embedding || o.model == "transformer",
                 "--remote-embedding puts the transformer's token table on a parameter server; add "
                 "--model transformer");
  DDPSCOPE_CHECK(o.unused_rank < 0 || (o.model == "mlp" && o.depth >= 3),
                 "--inject-unused leaves the MLP's second layer out: use --model mlp with --depth 3 or more");
  DDPSCOPE_CHECK(!o.remote_embedding || o.overlap, "--remote-embedding trains the trunk with DDP; drop --no-overlap");
  DDPSCOPE_CHECK(!o.join || o.overlap, "--join is DDP's; drop --no-overlap");
  DDPSCOPE_CHECK(!o.fused_optimizer || o.overlap,
                 "--fused-optimizer steps each DDP bucket's parameters once it is reduced; --no-overlap has "
                 "no buckets: drop one of them");
  DDPSCOPE_CHECK(!o.fused_optimizer || !o.remote_embedding,
                 "--fused-optimizer steps each bucket's .grad; under --remote-embedding DDP's gradients go to "
                 "the distributed autograd context and the distributed optimizer steps them: drop "
                 "--fused-optimizer");
  DDPSCOPE_CHECK(!o.remote_embedding || (!o.join && o.uneven_rank < 0),
                 "--join and --inject-uneven apply to DDP jobs without --remote-embedding");
  if (o.zero_overlap) o.zero = true;
  if (o.sync_bn) o.batch_norm = true;
  if (o.join_throw) o.join = true;
  DDPSCOPE_CHECK(!o.batch_norm || o.model == "mlp",
                 "--batch-norm and --sync-bn add BatchNorm to the mlp; the transformer normalises with LayerNorm: "
                 "use --model mlp");
  DDPSCOPE_CHECK(!o.zero || !o.remote_embedding,
                 "--zero shards the optimizer of a DDP job; under --remote-embedding the distributed optimizer "
                 "steps the parameters: drop --zero");
  DDPSCOPE_CHECK(!o.zero_overlap || o.overlap,
                 "--zero-overlap steps each DDP bucket's shard once it is reduced; --no-overlap has no buckets: "
                 "drop one of them");
  DDPSCOPE_CHECK(!o.zero || !o.fused_optimizer,
                 "--fused-optimizer and --zero both own the optimizer step; for ZeRO's step during backward use "
                 "--zero-overlap instead of --fused-optimizer");
  DDPSCOPE_CHECK(!o.sync_bn || !o.join || o.join_throw,
                 "--sync-bn with --join: a rank out of data cannot shadow SyncBatchNorm's collectives, so the "
                 "others would wait in them; use --join-throw (every rank stops when one runs out)");
  DDPSCOPE_CHECK(o.uneven_rank < 0 || o.uneven_iters < o.iters, "--inject-uneven ", o.uneven_rank, ":", o.uneven_iters,
                 " gives rank ", o.uneven_rank, " at least the --iters ", o.iters, " of the others: give it fewer");
}

Trainer::Trainer(TrainOptions options, std::shared_ptr<c10d::ProcessGroup> group)
    : options_(std::move(options)),
      group_(std::move(group)),
      device_(group_ ? group_->tensor_device() : Device::cpu()),
      // Each rank draws different batches; the model itself is seeded identically.
      data_gen_(options_.seed + 1 + 7919 * static_cast<uint64_t>(group_ ? group_->rank() : 0)) {
  validate_and_complete(options_);
  set_num_threads(options_.threads);
  Generator init_gen(options_.seed);
  const TrainOptions& o = options_;
  if (o.model == "mlp")
    build_mlp(init_gen);
  else
    build_transformer(init_gen);
  // Before DDP and the optimizer: the converted norms have parameters of their own.
  if (group_ && o.sync_bn) model_ = ddp::convert_sync_batchnorm(model_, group_);
  // NCCL reduces GPU tensors only: the model moves to the rank's GPU before DDP sees it,
  // as a PyTorch script calls model.to(device) before wrapping it.
  if (!device_.is_cpu()) {
    DDPSCOPE_CHECK(o.optimizer == "sgd",
                   "--backend nccl trains on the GPU, where only SGD updates parameters; --optimizer ", o.optimizer,
                   " updates CPU parameters: pass --optimizer sgd, or --backend mpi");
    model_->to(device_);
  }
  if (group_ && o.overlap) {
    // DDP checks the replicas match and broadcasts rank 0's parameters and buffers.
    model_ = std::make_shared<ddp::DistributedDataParallel>(model_, group_, ddp_options_of(o));
    register_comm_hook(static_cast<ddp::DistributedDataParallel&>(*model_), o.comm_hook, group_);
  } else if (group_) {
    // Start every replica from rank 0's parameters and buffers.
    for (auto& [name, t] : model_->state_dict())
      group_->broadcast(t, {.root = 0})->wait();
  }
  auto make_optimizer = [o](std::vector<Tensor> params) -> std::unique_ptr<optim::Optimizer> {
    if (o.optimizer == "sgd") {
      return std::make_unique<optim::SGD>(
          std::move(params), optim::SgdOptions{.lr = o.lr, .momentum = o.momentum, .weight_decay = o.weight_decay});
    }
    optim::AdamOptions a{.lr = o.lr, .weight_decay = o.weight_decay};
    if (o.optimizer == "adamw") {
      if (a.weight_decay == 0) a.weight_decay = 0.01;
      return std::make_unique<optim::AdamW>(std::move(params), a);
    }
    return std::make_unique<optim::Adam>(std::move(params), a);
  };
  // ZeRO on one rank would be the optimizer itself.
  if (o.zero && group_ && group_->size() > 1) {
    zero_ = std::make_unique<ddp::ZeroRedundancyOptimizer>(model_->parameters(), group_, make_optimizer);
    if (auto* ddp_model = dynamic_cast<ddp::DistributedDataParallel*>(model_.get()); ddp_model && o.zero_overlap)
      zero_->overlap_with(*ddp_model);
  } else {
    optimizer_ = make_optimizer(model_->parameters());
  }
  if (o.fused_optimizer) install_fused_optimizer();
  hook_slow_layer_if_asked();
}

// --model mlp: the dataset --data names and an MLP shaped for it.
void Trainer::build_mlp(Generator& init_gen) {
  const TrainOptions& o = options_;
  nn::MlpConfig c;
  c.width = o.width + (group_ && group_->rank() == o.mismatch_rank ? 1 : 0);
  c.depth = o.depth;
  c.batch_norm = o.batch_norm;
  if (o.data == "digits") {
    const std::string path = o.data_path.empty() ? nn::default_digits_path() : o.data_path;
    DDPSCOPE_CHECK(!path.empty(),
                   "--data digits: python3-sklearn's digits.csv.gz was not "
                   "found; install python3-sklearn or pass --data-path");
    dataset_ = nn::load_digits(path);
    c.in_features = 64;
    c.out_features = 10;
    classification_ = true;
  } else if (o.data == "classification") {
    dataset_ = nn::make_classification(4096, 32, 8, o.seed + 2);
    c.in_features = 32;
    c.out_features = 8;
    classification_ = true;
  } else {
    dataset_ = nn::make_regression(4096, 32, 4, 0.01, o.seed + 2);
    c.in_features = 32;
    c.out_features = 4;
  }
  auto mlp = std::make_shared<nn::Mlp>(c, &init_gen);
  if (group_ && group_->rank() == o.unused_rank) mlp->skip_second_layer(true);
  model_ = mlp;
}

// --model transformer: the character corpus and a transformer over its vocabulary.
void Trainer::build_transformer(Generator& init_gen) {
  const TrainOptions& o = options_;
  const std::string path = o.data_path.empty() ? nn::default_corpus_path() : o.data_path;
  DDPSCOPE_CHECK(!path.empty(),
                 "the shipped corpus.txt was not found; set DDPSCOPE_DATA_DIR "
                 "or pass --data-path");
  corpus_ = nn::CharCorpus::from_file(path);
  nn::TransformerConfig c;
  c.vocab_size = corpus_->vocab_size();
  c.context = o.context;
  c.d_model = o.width;
  c.heads = o.heads;
  c.layers = o.depth + (group_ && group_->rank() == o.mismatch_rank ? 1 : 0);
  model_ = std::make_shared<nn::CharTransformer>(c, &init_gen);
}

int64_t Trainer::optimizer_state_bytes() const { return zero_ ? zero_->state_bytes() : optimizer_->state_bytes(); }

void Trainer::install_fused_optimizer() {
  auto* ddp_model = dynamic_cast<ddp::DistributedDataParallel*>(model_.get());
  if (!ddp_model) return;  // one rank or --no-overlap: nothing to overlap the step with
  // The reducer's parameter indices, as the optimizer's.
  std::unordered_map<const TensorImpl*, size_t> optimizer_index;
  for (size_t i = 0; i < optimizer_->params().size(); ++i)
    optimizer_index[optimizer_->params()[i].impl()] = i;
  std::vector<size_t> to_optimizer;
  for (const Tensor& p : ddp_model->reducer().parameters()) {
    const auto it = optimizer_index.find(p.impl());
    DDPSCOPE_CHECK(it != optimizer_index.end(), "--fused-optimizer: DDP parameter ", p.name(),
                   " is not among the optimizer's parameters");
    to_optimizer.push_back(it->second);
  }
  ddp_model->reducer().set_bucket_reduced_hook(
      [this, to_optimizer = std::move(to_optimizer)](size_t bucket, const std::vector<size_t>& params) {
        DDPSCOPE_SPAN(span, probes::Kind::Optimizer, "optimizer");
        span.args().bucket = static_cast<int16_t>(bucket);
        std::vector<size_t> indices;
        indices.reserve(params.size());
        int64_t bytes = 0;
        for (size_t p : params) {
          indices.push_back(to_optimizer[p]);
          bytes += static_cast<int64_t>(optimizer_->params()[to_optimizer[p]].nbytes());
        }
        span.args().bytes = bytes;
        fault_point("optimizer", group_->rank(), iteration_);
        optimizer_->step_params(indices);
        fused_stepped_ += indices.size();
      });
}

int64_t Trainer::iterations() const {
  return group_ && group_->rank() == options_.uneven_rank ? options_.uneven_iters : options_.iters;
}

std::unique_ptr<ddp::DistributedDataParallel::JoinContext> Trainer::join_context() {
  auto* ddp_model = dynamic_cast<ddp::DistributedDataParallel*>(model_.get());
  if (!options_.join || !ddp_model) return nullptr;
  auto join = ddp_model->join(true, options_.join_throw);
  if (zero_) zero_->join_with(*join);  // a joined rank still steps and sends its shard
  return join;
}

std::pair<Tensor, Tensor> Trainer::next_batch() {
  auto [x, y] = corpus_ ? corpus_->sample(options_.batch, options_.context, data_gen_)
                        : dataset_->sample(options_.batch, data_gen_);
  if (device_.is_cpu()) return {x, y};
  return {x.to(device_), y.to(device_)};
}

Tensor Trainer::loss_of(const Tensor& output, const Tensor& target) const {
  if (corpus_ || classification_) {
    return cross_entropy(reshape(output, {-1, output.size(-1)}), reshape(target, {-1}));
  }
  return mse_loss(output, target);
}

StepResult Trainer::step() {
  inject_slowdown_if_asked("outside_step");
  const auto t0 = std::chrono::steady_clock::now();
  probes::set_iteration(iteration_ + 1);
  DDPSCOPE_SPAN(iteration_span, probes::Kind::Iteration, "iteration");
  auto [x, y] = next_batch();
  if (zero_)
    zero_->zero_grad(true);
  else
    optimizer_->zero_grad(true);
  fused_stepped_ = 0;
  DDPSCOPE_SPAN(forward_span, probes::Kind::Forward, "forward");
  probes::set_phase("forward");
  enter_cpu_phase(probes::CpuPhase::Forward);
  const int rank = group_ ? group_->rank() : 0;
  fault_point("forward", rank, iteration_ + 1);
  Tensor output;
  inject_slowdown_if_asked("forward");
  try {
    output = model_->forward(x);
  } catch (const ddp::DistributedDataParallel::EarlyTermination&) {
    // --join-throw: this iteration never ran, on any rank.
    forward_span.cancel();
    iteration_span.cancel();
    throw;
  }
  const Tensor loss = loss_of(output, y);
  forward_span.end();
  enter_cpu_phase(probes::CpuPhase::Outside);
  inject_stall_if_asked();
  // The graph of the first iteration, and of any iteration asked for since.
  if (probes::enabled() && (iteration_ == 0 || probes::take_graph_request())) {
    autograd::record_graph({loss}, iteration_ + 1);
  }
  {
    DDPSCOPE_SPAN(backward_span, probes::Kind::Backward, "backward");
    probes::set_phase("backward");
    enter_cpu_phase(probes::CpuPhase::Backward);  // until DDP's finalize, or its end
    fault_point("backward", rank, iteration_ + 1);
    inject_slowdown_if_asked("backward");
    loss.backward();
  }
  enter_cpu_phase(probes::CpuPhase::Outside);
  // Fail here, naming them, rather than let the loss allreduce below meet the other ranks'
  // allreduce of the bucket this rank never launched (MPI then aborts with no word).
  if (const std::string missing = ddp_parameters_without_gradients(); !missing.empty()) {
    iteration_span.cancel();  // the run file shows this rank failing inside the iteration
    throw DDPSCOPE_ERROR("DDP on rank ", group_->rank(), ": the backward of iteration ", iteration_ + 1,
                         " produced no gradient for ", missing,
                         ". Their bucket never launches its allreduce, so the other ranks wait in theirs. If "
                         "the model does not use every parameter in every forward, train with "
                         "--find-unused-parameters");
  }
  probes::set_phase("gradient sync");
  synchronize_gradients();
  // Reading every gradient each iteration would cost a pass over them (2 ms of a 35 ms
  // step for 25 MiB); a loss that is not finite is the cheap trigger to look.
  const double local_loss = loss.item<double>();
  if (!std::isfinite(local_loss)) {
    if (named_parameters_.empty()) named_parameters_ = model_->named_parameters();
    nonfinite_.check_gradients(iteration_ + 1, named_parameters_);
  }
  enter_cpu_phase(probes::CpuPhase::Optimizer);
  step_optimizer(rank);
  enter_cpu_phase(probes::CpuPhase::Outside);
  iteration_span.end();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++iteration_;
  // Replicas are identical: rank 0 alone writes the file.
  if (iteration_ == options_.iters && !options_.save_path.empty() && (!group_ || group_->rank() == 0)) {
    model_->save(options_.save_path);
  }
  double loss_value = local_loss;
  nonfinite_.check_loss(iteration_, loss_value);
  loss_value = loss_over_ranks(loss_value);
  probes::set_phase("");
  record_step_metrics(loss_value, seconds);
  return {iteration_, loss_value, seconds};
}

// The training thread's CPU wait is summed by phase (cpu_wait.h) while probes record.
void Trainer::enter_cpu_phase(probes::CpuPhase phase) {
  if (probes::enabled()) probes::enter_cpu_phase(phase);
}

// --inject-stall: sleep between this iteration's forward and backward on the chosen rank.
void Trainer::inject_stall_if_asked() {
  if (group_ && group_->rank() == options_.stall_rank && iteration_ + 1 == options_.stall_iteration) {
    DDPSCOPE_INSTANT(probes::Kind::Mark, "injected stall");
    std::this_thread::sleep_for(std::chrono::duration<double>(options_.stall_seconds));
  }
}

// --inject-slow: sleep in `phase` of every iteration on the chosen rank.
void Trainer::inject_slowdown_if_asked(const char* phase) {
  if (group_ && group_->rank() == options_.slow_rank && options_.slow_phase == phase && options_.slow_layer.empty() &&
      iteration_ + 1 >= options_.slow_from)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(options_.slow_ms));
}

// --inject-slow R:backward@LAYER:MS: a hook on the layer's first parameter sleeps when its
// gradient arrives, inside backward, as a slow layer's gradient would. The layer is named as
// the model names it, with or without DDP's "module." before it.
void Trainer::hook_slow_layer_if_asked() {
  if (!group_ || group_->rank() != options_.slow_rank || options_.slow_layer.empty()) return;
  std::vector<std::string> layers;
  for (const auto& [name, p] : model_->named_parameters()) {
    const std::string layer = name.substr(0, name.rfind('.'));
    if (layer == options_.slow_layer || layer == "module." + options_.slow_layer) {
      // The trainer owns the model, and so outlives the hook.
      p.register_hook([this](const Tensor&) -> std::optional<Tensor> {
        if (iteration_ + 1 >= options_.slow_from)
          std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(options_.slow_ms));
        return std::nullopt;
      });
      return;
    }
    if (layers.empty() || layers.back() != layer) layers.push_back(layer);
  }
  std::string known;
  for (const std::string& l : layers)
    known += (known.empty() ? "" : ", ") + l;
  throw DDPSCOPE_ERROR("--inject-slow: the model has no layer '", options_.slow_layer, "'; its layers are ", known);
}

// The DDP parameters the last backward left without a gradient, named; empty when all
// got one or the model is not wrapped in DDP.
std::string Trainer::ddp_parameters_without_gradients() const {
  auto* ddp_model = dynamic_cast<ddp::DistributedDataParallel*>(model_.get());
  return ddp_model ? ddp_model->reducer().parameters_without_gradients() : std::string();
}

// The optimizer step after backward (the fault point counts the iteration before it ends).
void Trainer::step_optimizer(int rank) {
  // The span holds an injected slowdown on every path: under --zero it sat outside any span
  // and read as time outside the step, and under --fused-optimizer (which stepped the buckets
  // during backward) it never ran.
  probes::set_phase("optimizer");
  {
    DDPSCOPE_SPAN(optimizer_span, probes::Kind::Optimizer, "optimizer");
    fault_point("optimizer", rank, iteration_);
    inject_slowdown_if_asked("optimizer");
    if (!zero_ && fused_stepped_ == 0) optimizer_->step();
  }
  // The shard's update (done during backward under --zero-overlap; its own span), then the
  // broadcasts, which are collectives: outside the optimizer's span, so that a rank waiting
  // in them waits, not steps.
  if (zero_) zero_->step();
}

// The loss averaged over the group's ranks; this rank's own under --join or without a group.
double Trainer::loss_over_ranks(double loss_value) {
  // Under join a joined rank only shadows DDP's allreduces: this one would meet a shadow.
  // A rank that skips it on purpose (DDPSCOPE_FAULT ...,skip) calls the wrong collective next.
  probes::set_phase("loss allreduce");
  if (group_ && !options_.join) {
    if (!fault_point("allreduce", group_->rank(), iteration_)) {
      Tensor l = Tensor::scalar(loss_value, DType::F64).to(device_);
      group_->allreduce(l, {.op = c10d::ReduceOp::Avg})->wait();
      loss_value = l.item<double>();
    } else {
      run_injected_loss_collective();
    }
  }
  return loss_value;
}

void Trainer::record_step_metrics(double loss_value, double seconds) {
  probes::record_metric(iteration_, "loss", loss_value);
  probes::record_metric(iteration_, "samples_per_s", static_cast<double>(samples_per_step()) / std::max(seconds, 1e-9));
  probes::record_metric(iteration_, "iteration_ms", seconds * 1e3);
  probes::record_metric(iteration_, "optimizer_state_bytes", static_cast<double>(optimizer_state_bytes()));
  // Its threads' wait for a CPU by phase (cpu_wait.h): `why` tells a rank late for want of a
  // core from one slow at its work.
  if (!probes::enabled()) return;
  static constexpr const char* kCpuWaitMetric[] = {"cpu_wait_ms.outside_step", "cpu_wait_ms.forward",
                                                   "cpu_wait_ms.backward", "cpu_wait_ms.optimizer"};
  const auto waits = probes::take_cpu_phase_waits_ms();
  for (size_t p = 0; p < waits.size(); ++p)
    if (waits[p] >= 0) probes::record_metric(iteration_, kCpuWaitMetric[p], waits[p]);
}

// DDPSCOPE_FAULT's wrong_* actions: a collective that does not match the other ranks'
// loss allreduce (skip: none at all). What MPI then does is undefined: a hang, an error or
// a wrong sum; the flight recorder's records say what happened either way.
void Trainer::run_injected_loss_collective() {
  Tensor t;
  switch (fault_spec().action) {
    case FaultSpec::Action::WrongOp:
      t = Tensor::scalar(0.0, DType::F64).to(device_);
      group_->broadcast(t, {.root = 0})->wait();
      break;
    case FaultSpec::Action::WrongSize:
      t = Tensor::zeros({2}, DType::F64).to(device_);
      group_->allreduce(t, {.op = c10d::ReduceOp::Avg})->wait();
      break;
    case FaultSpec::Action::WrongDtype:
      t = Tensor::scalar(0.0, DType::F32).to(device_);
      group_->allreduce(t, {.op = c10d::ReduceOp::Avg})->wait();
      break;
    default: break;  // skip
  }
}

void Trainer::measure_allreduce_cost() {
  if (!group_ || group_->size() == 1) return;
  int64_t grad_bytes = 0;
  for (const auto& [name, p] : model_->named_parameters())
    grad_bytes += static_cast<int64_t>(p.nbytes());
  // Sizes x4 apart from 64 KiB, then the whole gradient: 5 timed allreduces each after
  // one that pays any first-use cost (advise takes their median).
  std::vector<int64_t> sizes;
  for (int64_t b = 64 << 10; b < grad_bytes; b *= 4)
    sizes.push_back(b);
  sizes.push_back(std::max<int64_t>(grad_bytes, 64 << 10));
  probes::set_iteration(0);
  DDPSCOPE_INSTANT(probes::Kind::Mark, "allreduce sweep");
  for (int64_t bytes : sizes) {
    Tensor t = Tensor::zeros({bytes / 4}, DType::F32, device_);
    for (int k = 0; k < 6; ++k)
      group_->allreduce(t, {.op = c10d::ReduceOp::Sum})->wait();
  }
  DDPSCOPE_INSTANT(probes::Kind::Mark, "allreduce sweep end");
}

void Trainer::synchronize_gradients() {
  if (!group_ || group_->size() == 1 || options_.overlap) return;  // DDP did it during backward
  std::vector<Tensor> grads;
  for (const Tensor& p : model_->parameters()) {
    // A parameter unused this step gets a zero gradient so every rank sends the same list.
    if (!p.grad().defined()) p.set_grad(Tensor::zeros(p.sizes(), p.dtype(), p.device()));
    grads.push_back(p.grad());
  }
  // The baseline's one reduction, after backward: all of it is exposed communication.
  DDPSCOPE_SPAN(span, probes::Kind::Allreduce, "allreduce_after_backward");
  int64_t bytes = 0;
  for (const Tensor& g : grads)
    bytes += static_cast<int64_t>(g.nbytes());
  span.args().bytes = bytes;
  group_->allreduce_coalesced(grads, {.op = c10d::ReduceOp::Avg})->wait();
}

std::string Trainer::describe() const {
  std::ostringstream os;
  os << options_.model << " (" << model_->num_parameters() << " parameters) on " << options_.data << ", "
     << options_.optimizer << " lr " << options_.lr << ", batch " << options_.batch << ", " << options_.threads
     << " thread" << (options_.threads > 1 ? "s" : "");
  if (!device_.is_cpu()) os << ", on " << device_.str();
  if (zero_) os << ", ZeRO" << (options_.zero_overlap ? " overlapped with DDP" : "");
  if (options_.sync_bn && group_)
    os << ", SyncBatchNorm";
  else if (options_.batch_norm)
    os << ", BatchNorm";
  return os.str();
}

}  // namespace ddpscope::apps
