#include "remote_embedding_trainer.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <sstream>

#include "autograd/ops.h"
#include "ddp/distributed_data_parallel.h"
#include "dist_autograd/dist_autograd.h"
#include "fault_injection.h"
#include "probe.h"
#include "records.h"
#include "rpc/rpc.h"
#include "tensor/threads.h"

namespace ddpscope::apps {
namespace {

using rpc::Value;
using rpc::ValueList;

// The token table this process serves (set on the server only). The registered
// functions are process-wide, so they reach it through here.
std::mutex g_table_mutex;
std::shared_ptr<nn::Embedding> g_table;

std::shared_ptr<nn::Embedding> served_table() {
  std::lock_guard<std::mutex> lock(g_table_mutex);
  DDPSCOPE_CHECK(g_table != nullptr, "train --remote-embedding: this worker holds no token table; worker 0 serves it");
  return g_table;
}

void register_server_functions() {
  // indices [B, T] -> token embeddings [B, T, C]; inside the caller's context, so the
  // reply records a send function here and a recv function on the trainer.
  // DDPSCOPE_FAULT on the server (rank 0) counts the calls it served as iterations:
  // phase=serve fails inside call N, phase=backward when the distributed backward
  // brings call N's gradient back here.
  rpc::register_function("train.embed", [](const ValueList& a) -> Value {
    static std::atomic<int64_t> calls{0};
    const int64_t call = ++calls;
    fault_point("serve", 0, call);
    Tensor out = served_table()->forward(a.at(0).tensor());
    if (fault_spec().rank == 0 && fault_spec().phase == "backward" && fault_spec().iteration == call) {
      out.register_hook([call](const Tensor&) -> std::optional<Tensor> {
        fault_point("backward", 0, call);
        return std::nullopt;
      });
    }
    return out;
  });
  // The table itself, for the trainers' RRefs (owned here, stepped here).
  rpc::register_function("train.embedding_table", [](const ValueList&) -> Value { return served_table()->weight(); });
}

dist_autograd::OptimizerSpec optimizer_spec(const TrainOptions& o) {
  if (o.optimizer == "sgd") {
    return dist_autograd::OptimizerSpec::sgd_with({.lr = o.lr, .momentum = o.momentum, .weight_decay = o.weight_decay});
  }
  optim::AdamOptions a{.lr = o.lr, .weight_decay = o.weight_decay};
  if (o.optimizer == "adam") return dist_autograd::OptimizerSpec::adam_with(a);
  if (a.weight_decay == 0) a.weight_decay = 0.01;  // as Trainer does for AdamW
  return dist_autograd::OptimizerSpec::adamw_with(a);
}

}  // namespace

RemoteEmbeddingTrainer::RemoteEmbeddingTrainer(TrainOptions options, std::shared_ptr<c10d::ProcessGroup> world)
    : options_(std::move(options)),
      world_(std::move(world)),
      // Trainer k samples what rank k-1 of `train --np N-1` samples (see the header).
      data_gen_(options_.seed + 1 + 7919 * static_cast<uint64_t>(std::max(world_->rank() - 1, 0))) {
  validate_and_complete(options_);
  DDPSCOPE_CHECK(world_->size() >= 2,
                 "--remote-embedding needs a parameter server and at least one trainer: --np 2 or "
                 "more (this job has ",
                 world_->size(), ")");
  set_num_threads(options_.threads);
  const std::string path = options_.data_path.empty() ? nn::default_corpus_path() : options_.data_path;
  DDPSCOPE_CHECK(!path.empty(), "the shipped corpus.txt was not found; set DDPSCOPE_DATA_DIR or pass --data-path");
  corpus_ = nn::CharCorpus::from_file(path);
  config_.vocab_size = corpus_->vocab_size();
  config_.context = options_.context;
  config_.d_model = options_.width;
  config_.heads = options_.heads;
  config_.layers = options_.depth;

  // CharTransformer's draws in its order: the table, then the trunk. Every rank makes
  // both so the generator reaches the trunk in the same state; only the server keeps
  // the table.
  Generator init_gen(options_.seed);
  auto table = std::make_shared<nn::Embedding>(config_.vocab_size, config_.d_model, &init_gen);
  trunk_ = std::make_shared<nn::CharTransformerTrunk>(config_, &init_gen);
  if (is_server()) {
    table_ = table;
    std::lock_guard<std::mutex> lock(g_table_mutex);
    g_table = table;
  }
  std::vector<int> trainer_ranks;
  for (int r = 1; r < world_->size(); ++r)
    trainer_ranks.push_back(r);
  trainers_group_ = world_->new_group(trainer_ranks);  // collective over the world
  register_server_functions();
  // Every pass repeats one graph: the run file keeps the first iteration's on each worker.
  dist_autograd::limit_recorded_graphs(is_server() ? trainers() : 1);
  rpc::init_rpc("", {}, world_);
  if (is_server()) return;

  ddp_ = std::make_shared<ddp::DistributedDataParallel>(trunk_, trainers_group_, ddp_options_of(options_));
  table_ref_ = rpc::remote(0, "train.embedding_table");
  std::vector<rpc::RRef> params = {table_ref_};
  for (const Tensor& p : ddp_->parameters()) {
    trunk_refs_.push_back(rpc::make_rref(Value(p)));
    params.push_back(trunk_refs_.back());
  }
  optimizer_ = std::make_unique<dist_autograd::DistributedOptimizer>(optimizer_spec(options_), params);
}

RemoteEmbeddingTrainer::~RemoteEmbeddingTrainer() {
  if (is_server()) {
    std::lock_guard<std::mutex> lock(g_table_mutex);
    g_table.reset();
  }
}

double RemoteEmbeddingTrainer::trainer_step() {
  auto [x, y] = corpus_->sample(options_.batch, options_.context, data_gen_);
  dist_autograd::ContextGuard context;
  DDPSCOPE_SPAN(forward_span, probes::Kind::Forward, "forward");
  const int rank = world_->rank();
  fault_point("forward", rank, iteration_ + 1);
  Tensor embedded = rpc::rpc_sync(0, "train.embed", {Value(x)}).tensor();
  // This trainer's share of the table's update (see the header).
  const double share = 1.0 / trainers();
  embedded.register_hook([share](const Tensor& g) -> std::optional<Tensor> { return mul_scalar(g, share); });
  const Tensor logits = ddp_->forward(embedded);
  const Tensor loss = cross_entropy(reshape(logits, {-1, logits.size(-1)}), reshape(y, {-1}));
  forward_span.end();
  {
    DDPSCOPE_SPAN(backward_span, probes::Kind::Backward, "backward");
    fault_point("backward", rank, iteration_ + 1);
    dist_autograd::backward(context.id(), {loss});
  }
  {
    DDPSCOPE_SPAN(optimizer_span, probes::Kind::Optimizer, "optimizer");
    fault_point("optimizer", rank, iteration_ + 1);
    optimizer_->step(context.id());
  }
  return loss.item<double>();
}

StepResult RemoteEmbeddingTrainer::step() {
  const auto t0 = std::chrono::steady_clock::now();
  probes::set_iteration(iteration_ + 1);
  double loss_value = 0;
  {
    DDPSCOPE_SPAN(iteration_span, probes::Kind::Iteration, "iteration");
    if (!is_server()) {
      loss_value = trainer_step();
      iteration_span.end();
    }
    // The server adds nothing; the sum over the world is the trainers' sum. It also keeps
    // the server in step with the trainers, for the progress it reports, and its
    // iteration spans the trainers' step (rank 0's iterations are the timeline's).
    Tensor l = Tensor::scalar(loss_value, DType::F64);
    world_->allreduce(l, {.op = c10d::ReduceOp::Sum})->wait();
    loss_value = l.item<double>() / trainers();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++iteration_;
  if (iteration_ == options_.iters && !options_.save_path.empty() && world_->rank() == 1) save_whole_model();
  probes::record_metric(iteration_, "loss", loss_value);
  probes::record_metric(iteration_, "samples_per_s", static_cast<double>(samples_per_step()) / std::max(seconds, 1e-9));
  probes::record_metric(iteration_, "iteration_ms", seconds * 1e3);
  return {iteration_, loss_value, seconds};
}

// The same file `train` without --remote-embedding writes: CharTransformer's names.
void RemoteEmbeddingTrainer::save_whole_model() const {
  nn::StateDict state = {{"tok_emb.weight", table_ref_.to_here().tensor()}};
  for (auto& [name, t] : trunk_->state_dict())
    state.emplace_back("trunk." + name, t);
  nn::save_state_dict(state, options_.save_path);
}

void RemoteEmbeddingTrainer::finish() {
  if (finished_) return;
  finished_ = true;
  // The optimizer drops its local optimizers on their owners, and every RRef must be
  // gone before a graceful shutdown (it names leaked ones).
  optimizer_.reset();
  trunk_refs_.clear();
  table_ref_ = rpc::RRef();
  rpc::shutdown(true);
}

std::string RemoteEmbeddingTrainer::describe() const {
  std::ostringstream os;
  os << "transformer with its token table on a parameter server (rank 0, " << config_.vocab_size * config_.d_model
     << " parameters) and the trunk under DDP on " << trainers() << " trainer" << (trainers() > 1 ? "s" : "") << " ("
     << trunk_->num_parameters() << " parameters) on " << options_.data << ", " << options_.optimizer << " lr "
     << options_.lr << " by one DistributedOptimizer, batch " << options_.batch << " per trainer";
  return os.str();
}

}  // namespace ddpscope::apps
