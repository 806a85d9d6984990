#include "random.h"

namespace ddpscope {
namespace {
template <typename Dist>
Tensor sample(const Shape& shape, DType dtype, Generator* gen, Dist dist) {
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Tensor::empty(shape, DType::F64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = static_cast<double>(dist(g.engine()));
  return dtype == DType::F64 ? t : t.to(dtype);
}
}  // namespace

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

Tensor randn(const Shape& shape, DType dtype, Generator* gen) {
  return sample(shape, dtype, gen, std::normal_distribution<double>(0.0, 1.0));
}

Tensor uniform(const Shape& shape, double low, double high, DType dtype, Generator* gen) {
  DDPSCOPE_CHECK(low <= high, "uniform: low ", low, " exceeds high ", high);
  return sample(shape, dtype, gen, std::uniform_real_distribution<double>(low, high));
}

Tensor bernoulli(const Shape& shape, double p, DType dtype, Generator* gen) {
  DDPSCOPE_CHECK(p >= 0.0 && p <= 1.0, "bernoulli: probability ", p, " is outside [0, 1]");
  return sample(shape, dtype, gen, std::bernoulli_distribution(p));
}

Tensor randint(const Shape& shape, int64_t high, Generator* gen) {
  DDPSCOPE_CHECK(high > 0, "randint: upper bound must be positive, got ", high);
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Tensor::empty(shape, DType::I64);
  std::uniform_int_distribution<int64_t> dist(0, high - 1);
  int64_t* p = t.data<int64_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = dist(g.engine());
  return t;
}

}  // namespace ddpscope
