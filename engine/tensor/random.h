// Seeded random numbers for initialisation, dropout and synthetic data. The same seed
// gives the same tensors on every run and every rank (on this platform's libstdc++).
#pragma once

#include <cstdint>
#include <random>

#include "tensor.h"

namespace ddpscope {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : engine_(seed), seed_(seed) {}
  void manual_seed(uint64_t seed) {
    engine_.seed(seed);
    seed_ = seed;
  }
  uint64_t seed() const { return seed_; }
  std::mt19937_64& engine() { return engine_; }

 private:
  std::mt19937_64 engine_;
  uint64_t seed_;
};

// The process-wide generator used when none is given. Not thread-safe: seed and use it
// from the training thread.
Generator& default_generator();
void manual_seed(uint64_t seed);

Tensor randn(const Shape& shape, DType dtype = DType::F32, Generator* gen = nullptr);
Tensor uniform(const Shape& shape, double low, double high, DType dtype = DType::F32, Generator* gen = nullptr);
// 1 with probability p, else 0.
Tensor bernoulli(const Shape& shape, double p, DType dtype = DType::F32, Generator* gen = nullptr);
// Uniform integers in [0, high) as i64.
Tensor randint(const Shape& shape, int64_t high, Generator* gen = nullptr);

}  // namespace ddpscope
