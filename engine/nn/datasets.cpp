#include "datasets.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../tensor/kernels.h"

namespace ddpscope::nn {

std::pair<Tensor, Tensor> Dataset::gather(const std::vector<int64_t>& indices) const {
  const int64_t n = static_cast<int64_t>(indices.size());
  auto take = [&](const Tensor& src) {
    Shape shape = src.sizes();
    shape[0] = n;
    Tensor out = Tensor::empty(shape, src.dtype());
    for (int64_t i = 0; i < n; ++i) {
      DDPSCOPE_CHECK(indices[i] >= 0 && indices[i] < src.size(0), "dataset: row ", indices[i], " out of range for ",
                     src.size(0), " rows");
      kernels::copy(out.narrow(0, i, 1), src.narrow(0, indices[i], 1));
    }
    return out;
  };
  return {take(x), take(y)};
}

std::pair<Tensor, Tensor> Dataset::sample(int64_t batch, Generator& gen) const {
  DDPSCOPE_CHECK(size() > 0, "dataset: cannot sample from an empty dataset");
  std::uniform_int_distribution<int64_t> dist(0, size() - 1);
  std::vector<int64_t> idx(static_cast<size_t>(batch));
  for (auto& i : idx)
    i = dist(gen.engine());
  return gather(idx);
}

Dataset make_regression(int64_t samples, int64_t in_features, int64_t out_features, double noise, uint64_t seed) {
  Generator gen(seed);
  const int64_t hidden = std::max<int64_t>(in_features, 8);
  const Tensor w1 = kernels::affine(randn({in_features, hidden}, DType::F32, &gen),
                                    1.0 / std::sqrt(static_cast<double>(in_features)), 0.0);
  const Tensor w2 = kernels::affine(randn({hidden, out_features}, DType::F32, &gen),
                                    1.0 / std::sqrt(static_cast<double>(hidden)), 0.0);
  Tensor x = randn({samples, in_features}, DType::F32, &gen);
  Tensor y = kernels::matmul(kernels::unary(kernels::matmul(x, w1), kernels::UnaryOp::Tanh), w2);
  if (noise > 0) kernels::add_(y, randn(y.sizes(), DType::F32, &gen), noise);
  return {x, y};
}

Dataset make_classification(int64_t samples, int64_t in_features, int64_t classes, uint64_t seed) {
  DDPSCOPE_CHECK(classes >= 2, "make_classification: need at least 2 classes, got ", classes);
  Generator gen(seed);
  const Tensor centres = kernels::affine(randn({classes, in_features}, DType::F32, &gen), 2.0, 0.0);
  Tensor labels = randint({samples}, classes, &gen);
  Tensor x = randn({samples, in_features}, DType::F32, &gen);
  for (int64_t i = 0; i < samples; ++i) {
    kernels::add_(x.narrow(0, i, 1), centres.narrow(0, labels.data<int64_t>()[i], 1));
  }
  return {x, labels};
}

Dataset load_digits(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");  // reads plain text too
  DDPSCOPE_CHECK(file != nullptr, "load_digits: cannot open '", path,
                 "'; install python3-sklearn or pass the path of digits.csv.gz");
  std::string text;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0)
    text.append(buffer, static_cast<size_t>(n));
  const bool read_error = n < 0;
  gzclose(file);
  DDPSCOPE_CHECK(!read_error, "load_digits: '", path, "' is not valid gzip or text");
  std::vector<float> features;
  std::vector<int64_t> labels;
  std::istringstream lines(text);
  std::string line;
  int64_t row = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    ++row;
    std::vector<double> values;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) {
      try {
        values.push_back(std::stod(cell));
      } catch (const std::exception&) {
        throw DDPSCOPE_ERROR("load_digits: '", path, "' row ", row, " has a non-number '", cell, "'");
      }
    }
    DDPSCOPE_CHECK(values.size() == 65, "load_digits: '", path, "' row ", row, " has ", values.size(),
                   " values; expected 64 pixels and a label");
    for (int i = 0; i < 64; ++i)
      features.push_back(static_cast<float>(values[i] / 16.0));
    labels.push_back(static_cast<int64_t>(values[64]));
  }
  DDPSCOPE_CHECK(row > 0, "load_digits: '", path, "' has no rows");
  return {Tensor::from_vector(features, {row, 64}), Tensor::from_vector(labels, {row})};
}

std::string default_digits_path() {
  const char* candidates[] = {"/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",
                              "/usr/local/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"};
  for (const char* c : candidates) {
    if (std::filesystem::exists(c)) return c;
  }
  return {};
}

CharCorpus CharCorpus::from_text(const std::string& text) {
  DDPSCOPE_CHECK(text.size() >= 2, "CharCorpus: the text needs at least 2 characters");
  CharCorpus c;
  c.alphabet_ = text;
  std::sort(c.alphabet_.begin(), c.alphabet_.end());
  c.alphabet_.erase(std::unique(c.alphabet_.begin(), c.alphabet_.end()), c.alphabet_.end());
  c.ids_.reserve(text.size());
  for (char ch : text) {
    c.ids_.push_back(std::lower_bound(c.alphabet_.begin(), c.alphabet_.end(), ch) - c.alphabet_.begin());
  }
  return c;
}

CharCorpus CharCorpus::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DDPSCOPE_CHECK(in.good(), "CharCorpus: cannot open '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return from_text(ss.str());
}

std::pair<Tensor, Tensor> CharCorpus::sample(int64_t batch, int64_t context, Generator& gen) const {
  DDPSCOPE_CHECK(context >= 1 && length() > context, "CharCorpus: context ", context, " needs a text longer than ",
                 context, " characters (have ", length(), ")");
  std::uniform_int_distribution<int64_t> dist(0, length() - context - 1);
  Tensor x = Tensor::empty({batch, context}, DType::I64);
  Tensor y = Tensor::empty({batch, context}, DType::I64);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = dist(gen.engine());
    std::copy_n(ids_.begin() + start, context, x.data<int64_t>() + b * context);
    std::copy_n(ids_.begin() + start + 1, context, y.data<int64_t>() + b * context);
  }
  return {x, y};
}

std::string CharCorpus::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids)
    out.push_back(alphabet_.at(static_cast<size_t>(id)));
  return out;
}

std::string default_corpus_path() {
  namespace fs = std::filesystem;
  const char* env = std::getenv("DDPSCOPE_DATA_DIR");
  std::vector<fs::path> dirs;
  if (env) dirs.emplace_back(env);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path() / "data");
    dirs.push_back(exe.parent_path() / "../share/ddpscope/data");
  }
  dirs.emplace_back(DDPSCOPE_SOURCE_DATA_DIR);
  for (const auto& d : dirs) {
    const fs::path p = d / "corpus.txt";
    if (fs::exists(p)) return p.string();
  }
  return {};
}

}  // namespace ddpscope::nn
