// Training data: seeded synthetic regression and classification sets, the handwritten
// digits set that Debian's python3-sklearn ships, and a character corpus for the LM.
#pragma once

#include <string>
#include <vector>

#include "../tensor/random.h"
#include "../tensor/tensor.h"

namespace ddpscope::nn {

// Rows of features with their targets; batches are gathered by row index.
struct Dataset {
  Tensor x;  // [N, features]
  Tensor y;  // [N, outputs] (f32) or [N] (i64 class labels)
  int64_t size() const { return x.size(0); }
  // Rows `indices` of x and y, copied into contiguous batch tensors.
  std::pair<Tensor, Tensor> gather(const std::vector<int64_t>& indices) const;
  // A batch of `batch` rows drawn uniformly with the generator.
  std::pair<Tensor, Tensor> sample(int64_t batch, Generator& gen) const;
};

// y = tanh(x W1) W2 + noise, from a fixed random teacher: learnable, but not linear.
Dataset make_regression(int64_t samples, int64_t in_features, int64_t out_features, double noise, uint64_t seed);
// Gaussian blobs around `classes` random centres.
Dataset make_classification(int64_t samples, int64_t in_features, int64_t classes, uint64_t seed);

// scikit-learn's digits (1797 8x8 images, 64 features + label per CSV row, gzip or
// plain). Features are scaled to [0, 1].
Dataset load_digits(const std::string& path);
std::string default_digits_path();  // python3-sklearn's copy; empty when not installed

// A text as character ids, for next-character prediction.
class CharCorpus {
 public:
  static CharCorpus from_file(const std::string& path);
  static CharCorpus from_text(const std::string& text);
  int64_t vocab_size() const { return static_cast<int64_t>(alphabet_.size()); }
  int64_t length() const { return static_cast<int64_t>(ids_.size()); }
  // Inputs [batch, context] and targets shifted by one, both i64.
  std::pair<Tensor, Tensor> sample(int64_t batch, int64_t context, Generator& gen) const;
  std::string decode(const std::vector<int64_t>& ids) const;

 private:
  std::string alphabet_;
  std::vector<int64_t> ids_;
};

// The corpus shipped in resources/data (found next to the binary, in the source tree
// or in the installed share folder).
std::string default_corpus_path();

}  // namespace ddpscope::nn
