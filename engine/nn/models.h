// Models ready to train: a configurable MLP and a small character-level transformer
// language model whose parameters come in many sizes (embeddings, attention, MLP, norms),
// which makes DDP's bucketing interesting.
#pragma once

#include <memory>
#include <vector>

#include "layers.h"

namespace ddpscope::nn {

struct MlpConfig {
  int64_t in_features = 32;
  int64_t width = 64;
  int64_t depth = 3;  // number of Linear layers (>= 1)
  int64_t out_features = 1;
  bool final_activation = false;
  // A BatchNorm1d after each hidden Linear (Linear -> BatchNorm1d -> ReLU): the model of
  // train --batch-norm, whose norms --sync-bn converts to SyncBatchNorm.
  bool batch_norm = false;
};

// Linear -> ReLU -> ... -> Linear, as one Sequential named "layers".
class Mlp : public Module {
 public:
  explicit Mlp(const MlpConfig& config, Generator* gen = nullptr);
  std::string type_name() const override { return "Mlp"; }
  Tensor forward(const Tensor& x) override;
  // Leaves the second Linear (and its ReLU) out of forward, so its parameters get no
  // gradient: the unused parameter of train --inject-unused. Needs depth >= 3 (the layer
  // is width -> width, so the shapes still fit).
  void skip_second_layer(bool skip);

 private:
  std::shared_ptr<Sequential> layers_;
  size_t second_begin_ = 0, second_end_ = 0;  // the second layer's modules in layers_
  bool skip_second_ = false;
};

struct TransformerConfig {
  int64_t vocab_size = 64;
  int64_t context = 32;  // longest sequence
  int64_t d_model = 64;
  int64_t heads = 4;
  int64_t layers = 2;
  int64_t mlp_ratio = 4;
  double dropout = 0.0;
};

class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(const TransformerConfig& c, Generator* gen);
  std::string type_name() const override { return "CausalSelfAttention"; }
  Tensor forward(const Tensor& x) override;  // [B, T, C] -> [B, T, C]

 private:
  int64_t heads_;
  std::shared_ptr<Linear> qkv_, proj_;
};

class TransformerBlock : public Module {
 public:
  TransformerBlock(const TransformerConfig& c, Generator* gen);
  std::string type_name() const override { return "TransformerBlock"; }
  Tensor forward(const Tensor& x) override;

 private:
  std::shared_ptr<LayerNorm> ln1_, ln2_;
  std::shared_ptr<CausalSelfAttention> attn_;
  std::shared_ptr<Linear> fc_, proj_;
  std::shared_ptr<Dropout> drop_;
};

// Everything of CharTransformer after the token embedding: positions, blocks, final norm
// and head. Token embeddings [B, T, C] -> logits [B, T, vocab]. On its own it trains
// where the token table lives elsewhere (train --remote-embedding: on a parameter server).
class CharTransformerTrunk : public Module {
 public:
  explicit CharTransformerTrunk(const TransformerConfig& config, Generator* gen = nullptr);
  std::string type_name() const override { return "CharTransformerTrunk"; }
  Tensor forward(const Tensor& token_embeddings) override;

 private:
  TransformerConfig config_;
  std::shared_ptr<Embedding> pos_;
  std::vector<std::shared_ptr<TransformerBlock>> blocks_;
  std::shared_ptr<LayerNorm> ln_f_;
  std::shared_ptr<Linear> head_;
};

// indices i64 [B, T] -> logits [B, T, vocab]. The token table ("tok_emb") is drawn from
// `gen` first, then the trunk: an Embedding followed by a CharTransformerTrunk drawn from
// one generator start equal to this model's two parts.
class CharTransformer : public Module {
 public:
  explicit CharTransformer(const TransformerConfig& config, Generator* gen = nullptr);
  std::string type_name() const override { return "CharTransformer"; }
  Tensor forward(const Tensor& indices) override;
  const TransformerConfig& config() const { return config_; }

 private:
  TransformerConfig config_;
  std::shared_ptr<Embedding> tok_;
  std::shared_ptr<CharTransformerTrunk> trunk_;
};

}  // namespace ddpscope::nn
