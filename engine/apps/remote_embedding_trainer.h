// `ddpscope-cli train --model transformer --remote-embedding --np N` (seed 004's pattern):
// DDP and distributed autograd in one job.
//   - Rank 0 is a parameter server. It holds the transformer's token table and answers
//     "train.embed" calls with the rows a batch needs; it trains nothing itself.
//   - Ranks 1..N-1 are trainers. Each holds the rest of the model (CharTransformerTrunk)
//     under DDP over the trainers' own group. A step fetches the batch's token
//     embeddings by RPC inside a distributed autograd context, runs the trunk, and runs
//     the distributed backward. The embedding gradients go back to the server; DDP
//     averages the trunk's gradients into the context. One DistributedOptimizer then
//     steps the table on the server and the trunk here.
// Every trainer steps the table with its own gradient, as in PyTorch's parameter-server
// pattern (no lock between them: Hogwild). The trainer scales that gradient by
// 1/trainers, so an iteration's updates add up to DDP's averaged gradient (exactly so
// for SGD).
//
// Initialisation and data match `train --np N-1` without --remote-embedding: the table
// and the trunk are drawn from the seed in CharTransformer's order, and trainer k
// samples what rank k-1 samples there. So the two runs' loss curves can be compared.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "c10d/process_group.h"
#include "dist_autograd/distributed_optimizer.h"
#include "nn/datasets.h"
#include "nn/models.h"
#include "rpc/rref.h"
#include "trainer.h"

namespace ddpscope::apps {

class RemoteEmbeddingTrainer {
 public:
  // Collective over `world`: starts RPC on every rank. Needs 2 ranks or more.
  RemoteEmbeddingTrainer(TrainOptions options, std::shared_ptr<c10d::ProcessGroup> world);
  ~RemoteEmbeddingTrainer();
  RemoteEmbeddingTrainer(const RemoteEmbeddingTrainer&) = delete;
  RemoteEmbeddingTrainer& operator=(const RemoteEmbeddingTrainer&) = delete;

  // One iteration. On a trainer, a step; on the server, waiting for the trainers' step.
  // Either way the loss is the trainers' average.
  StepResult step();
  // Collective: drops this rank's optimizer and RRefs and shuts RPC down gracefully.
  void finish();

  const TrainOptions& options() const { return options_; }
  int64_t samples_per_step() const { return options_.batch * trainers(); }
  std::string describe() const;

 private:
  int trainers() const { return world_->size() - 1; }
  bool is_server() const { return world_->rank() == 0; }
  double trainer_step();
  void save_whole_model() const;

  TrainOptions options_;
  std::shared_ptr<c10d::ProcessGroup> world_;
  std::shared_ptr<c10d::ProcessGroup> trainers_group_;  // null on the server
  nn::TransformerConfig config_;
  std::optional<nn::CharCorpus> corpus_;
  Generator data_gen_;
  std::shared_ptr<nn::Embedding> table_;  // on the server: the token table it serves
  std::shared_ptr<nn::CharTransformerTrunk> trunk_;
  std::shared_ptr<nn::Module> ddp_;  // the trunk under DDP, on a trainer
  rpc::RRef table_ref_;
  std::vector<rpc::RRef> trunk_refs_;
  std::unique_ptr<dist_autograd::DistributedOptimizer> optimizer_;
  int64_t iteration_ = 0;
  bool finished_ = false;
};

}  // namespace ddpscope::apps
