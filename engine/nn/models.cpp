#include "models.h"

#include <cmath>
#include <limits>

#include "../autograd/ops.h"

namespace ddpscope::nn {

Mlp::Mlp(const MlpConfig& c, Generator* gen) {
  DDPSCOPE_CHECK(c.depth >= 1, "Mlp: depth must be at least 1, got ", c.depth);
  layers_ = register_module("layers", std::make_shared<Sequential>());
  int64_t in = c.in_features;
  for (int64_t i = 0; i < c.depth; ++i) {
    const bool last = i + 1 == c.depth;
    const int64_t out = last ? c.out_features : c.width;
    if (i == 1) second_begin_ = layers_->size();
    layers_->push_back(std::make_shared<Linear>(in, out, true, gen));
    if (!last && c.batch_norm) layers_->push_back(std::make_shared<BatchNorm1d>(out));
    if (!last || c.final_activation) layers_->push_back(std::make_shared<ReLU>());
    if (i == 1) second_end_ = layers_->size();
    in = out;
  }
}

void Mlp::skip_second_layer(bool skip) {
  DDPSCOPE_CHECK(!skip || (second_end_ > second_begin_ && second_end_ < layers_->size()),
                 "Mlp: skipping the second layer needs depth >= 3 (a width -> width layer)");
  skip_second_ = skip;
}

Tensor Mlp::forward(const Tensor& x) {
  if (!skip_second_) return layers_->forward(x);
  Tensor h = x;
  const auto& layers = layers_->children();
  for (size_t i = 0; i < layers.size(); ++i) {
    if (i >= second_begin_ && i < second_end_) continue;
    h = layers[i].second->forward(h);
  }
  return h;
}

CausalSelfAttention::CausalSelfAttention(const TransformerConfig& c, Generator* gen) : heads_(c.heads) {
  DDPSCOPE_CHECK(c.d_model % c.heads == 0, "transformer: d_model ", c.d_model, " is not divisible by heads ", c.heads);
  qkv_ = register_module("qkv", std::make_shared<Linear>(c.d_model, 3 * c.d_model, true, gen));
  proj_ = register_module("proj", std::make_shared<Linear>(c.d_model, c.d_model, true, gen));
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / heads_;
  const Tensor qkv = qkv_->forward(x);  // [B, T, 3C]
  // [B, T, C] -> [B*heads, T, hd]
  auto split_heads = [&](int64_t which) {
    const Tensor part = reshape(narrow(qkv, 2, which * C, C), {B, T, heads_, hd});
    return reshape(permute(part, {0, 2, 1, 3}), {B * heads_, T, hd});
  };
  const Tensor q = split_heads(0), k = split_heads(1), v = split_heads(2);
  Tensor scores = mul_scalar(matmul(q, transpose(k, 1, 2)), 1.0 / std::sqrt(static_cast<double>(hd)));
  // Causal mask: position t attends to positions <= t only.
  Tensor mask = Tensor::zeros({T, T}, x.dtype());
  for (int64_t i = 0; i < T; ++i) {
    for (int64_t j = i + 1; j < T; ++j) {
      if (x.dtype() == DType::F32) {
        mask.data<float>()[i * T + j] = -std::numeric_limits<float>::infinity();
      } else {
        mask.data<double>()[i * T + j] = -std::numeric_limits<double>::infinity();
      }
    }
  }
  // Built on the CPU, then moved beside the scores (a GPU model's attention).
  if (!x.device().is_cpu()) mask = mask.to(x.device());
  const Tensor att = softmax(add(scores, mask));
  const Tensor y = matmul(att, v);  // [B*heads, T, hd]
  const Tensor merged = reshape(permute(reshape(y, {B, heads_, T, hd}), {0, 2, 1, 3}), {B, T, C});
  return proj_->forward(merged);
}

TransformerBlock::TransformerBlock(const TransformerConfig& c, Generator* gen) {
  ln1_ = register_module("ln1", std::make_shared<LayerNorm>(c.d_model));
  attn_ = register_module("attn", std::make_shared<CausalSelfAttention>(c, gen));
  ln2_ = register_module("ln2", std::make_shared<LayerNorm>(c.d_model));
  fc_ = register_module("fc", std::make_shared<Linear>(c.d_model, c.mlp_ratio * c.d_model, true, gen));
  proj_ = register_module("proj", std::make_shared<Linear>(c.mlp_ratio * c.d_model, c.d_model, true, gen));
  drop_ = register_module("drop", std::make_shared<Dropout>(c.dropout, gen));
}

Tensor TransformerBlock::forward(const Tensor& x) {
  const Tensor h = add(x, drop_->forward(attn_->forward(ln1_->forward(x))));
  return add(h, drop_->forward(proj_->forward(gelu(fc_->forward(ln2_->forward(h))))));
}

CharTransformerTrunk::CharTransformerTrunk(const TransformerConfig& c, Generator* gen) : config_(c) {
  DDPSCOPE_CHECK(c.vocab_size > 0 && c.context > 0 && c.layers >= 1,
                 "transformer: vocab_size, context and layers must be positive");
  pos_ = register_module("pos_emb", std::make_shared<Embedding>(c.context, c.d_model, gen));
  for (int64_t i = 0; i < c.layers; ++i) {
    blocks_.push_back(register_module("blocks." + std::to_string(i), std::make_shared<TransformerBlock>(c, gen)));
  }
  ln_f_ = register_module("ln_f", std::make_shared<LayerNorm>(c.d_model));
  head_ = register_module("head", std::make_shared<Linear>(c.d_model, c.vocab_size, true, gen));
}

Tensor CharTransformerTrunk::forward(const Tensor& token_embeddings) {
  DDPSCOPE_CHECK(token_embeddings.dim() == 3 && token_embeddings.size(2) == config_.d_model,
                 "CharTransformerTrunk: expected token embeddings [B, T, ", config_.d_model, "], got ",
                 token_embeddings.describe());
  const int64_t T = token_embeddings.size(1);
  DDPSCOPE_CHECK(T <= config_.context, "CharTransformer: sequence length ", T, " exceeds the context of ",
                 config_.context);
  const Tensor positions = Tensor::arange(T, DType::I64).to(token_embeddings.device());
  Tensor h = add(token_embeddings, pos_->forward(positions));  // [B,T,C] + [T,C]
  for (auto& b : blocks_)
    h = b->forward(h);
  return head_->forward(ln_f_->forward(h));
}

CharTransformer::CharTransformer(const TransformerConfig& c, Generator* gen) : config_(c) {
  DDPSCOPE_CHECK(c.vocab_size > 0 && c.context > 0 && c.layers >= 1,
                 "transformer: vocab_size, context and layers must be positive");
  tok_ = register_module("tok_emb", std::make_shared<Embedding>(c.vocab_size, c.d_model, gen));
  trunk_ = register_module("trunk", std::make_shared<CharTransformerTrunk>(c, gen));
}

Tensor CharTransformer::forward(const Tensor& indices) {
  DDPSCOPE_CHECK(indices.dim() == 2 && indices.dtype() == DType::I64,
                 "CharTransformer: expected i64 indices [B, T], got ", indices.describe());
  return trunk_->forward(tok_->forward(indices));
}

}  // namespace ddpscope::nn
