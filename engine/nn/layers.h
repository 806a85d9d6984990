// The standard layers. Initialisation follows PyTorch's defaults and draws from the
// given generator (the process default when null), so a seed fixes every weight.
#pragma once

#include <memory>
#include <vector>

#include "../tensor/random.h"
#include "module.h"

namespace ddpscope::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);
  std::string type_name() const override { return "Linear"; }
  Tensor forward(const Tensor& x) override;
  const Tensor& weight() const { return weight_; }
  const Tensor& bias() const { return bias_; }

 private:
  Tensor weight_, bias_;
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, Generator* gen = nullptr);
  std::string type_name() const override { return "Embedding"; }
  Tensor forward(const Tensor& indices) override;
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5);
  std::string type_name() const override { return "LayerNorm"; }
  Tensor forward(const Tensor& x) override;

 private:
  Tensor weight_, bias_;
  double eps_;
};

// Normalises [N, C] over the batch. Training uses batch statistics and updates the
// running ones (buffers, so DDP can broadcast them); eval uses the running ones.
class BatchNorm1d : public Module {
 public:
  explicit BatchNorm1d(int64_t features, double eps = 1e-5, double momentum = 0.1);
  std::string type_name() const override { return "BatchNorm1d"; }
  Tensor forward(const Tensor& x) override;
  const Tensor& running_mean() const { return running_mean_; }
  const Tensor& running_var() const { return running_var_; }
  int64_t features() const { return running_mean_.numel(); }
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }

 protected:
  // For variants that compute the batch statistics elsewhere (SyncBatchNorm): checks
  // the input's shape, normalises with the running statistics, folds a batch's
  // statistics (biased variance over `count` samples) into them, normalises with given ones.
  void check_input(const Tensor& x, const char* who) const;
  Tensor normalize_with_running_stats(const Tensor& x) const;
  void update_running_stats(const Tensor& mean, const Tensor& var, double count);
  Tensor normalize(const Tensor& centered, const Tensor& var) const;

 private:
  Tensor weight_, bias_, running_mean_, running_var_, num_batches_tracked_;
  double eps_, momentum_;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr) : p_(p), gen_(gen) {}
  std::string type_name() const override { return "Dropout"; }
  Tensor forward(const Tensor& x) override;

 private:
  double p_;
  Generator* gen_;
};

class ReLU : public Module {
 public:
  std::string type_name() const override { return "ReLU"; }
  Tensor forward(const Tensor& x) override;
};

class GELU : public Module {
 public:
  std::string type_name() const override { return "GELU"; }
  Tensor forward(const Tensor& x) override;
};

class Tanh : public Module {
 public:
  std::string type_name() const override { return "Tanh"; }
  Tensor forward(const Tensor& x) override;
};

// Children named "0", "1", ... run in order.
class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::vector<std::shared_ptr<Module>> layers);
  void push_back(std::shared_ptr<Module> layer);
  std::string type_name() const override { return "Sequential"; }
  Tensor forward(const Tensor& x) override;
  size_t size() const { return layers_.size(); }

 protected:
  void replace_child_member(const std::string& name, const std::shared_ptr<Module>& child) override;

 private:
  std::vector<std::shared_ptr<Module>> layers_;
};

}  // namespace ddpscope::nn
