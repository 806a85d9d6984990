#include "tensor.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "cuda_runtime_facade.h"
#include "kernels.h"

namespace ddpscope {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

namespace {
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t wrapped = dim < 0 ? dim + ndim : dim;
  DDPSCOPE_CHECK(wrapped >= 0 && wrapped < ndim, op, ": dimension ", dim, " is out of range for a tensor with ", ndim,
                 " dimensions");
  return wrapped;
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape) {
    DDPSCOPE_CHECK(s >= 0, "cannot create a tensor of shape ", shape_str(shape), ": sizes must be non-negative");
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * element_size(dtype), device);
  impl->sizes = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  kernels::fill(t, 0.0);
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  kernels::fill(t, value);
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::arange(int64_t n, DType dtype) {
  Tensor t = empty({n}, DType::F64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < n; ++i)
    p[i] = static_cast<double>(i);
  return dtype == DType::F64 ? t : t.to(dtype);
}

int64_t Tensor::size(int64_t d) const { return impl_->sizes[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides[wrap_dim(d, dim(), "stride")]; }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = impl_->sizes.size(); i-- > 0;) {
    if (impl_->sizes[i] == 1) continue;
    if (impl_->strides[i] != expected) return false;
    expected *= impl_->sizes[i];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  std::string s = std::string(dtype_name(dtype())) + shape_str(sizes());
  if (!device().is_cpu()) s += detail::concat("@", device().str());
  return s;
}

void* Tensor::raw_data() const {
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * static_cast<int64_t>(element_size(dtype()));
}

namespace {
double read_as_double(const void* base, DType dtype, int64_t offset) {
  switch (dtype) {
    case DType::F32: return static_cast<const float*>(base)[offset];
    case DType::F64: return static_cast<const double*>(base)[offset];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(base)[offset]);
    case DType::F16: return half_bits_to_float(static_cast<const uint16_t*>(base)[offset]);
    case DType::BF16: return bf16_bits_to_float(static_cast<const uint16_t*>(base)[offset]);
  }
  return 0;
}
}  // namespace

template <typename T>
T Tensor::item() const {
  DDPSCOPE_CHECK(numel() == 1, "item(): expected a tensor with one element, got ", describe());
  if (!device().is_cpu()) return to(Device::cpu()).item<T>();
  return at<T>(std::vector<int64_t>(static_cast<size_t>(dim()), 0));
}

template <typename T>
T Tensor::at(const std::vector<int64_t>& index) const {
  DDPSCOPE_CHECK(device().is_cpu(), "at(): tensor is on ", device().str(), "; copy it to the CPU");
  DDPSCOPE_CHECK(static_cast<int64_t>(index.size()) == dim(), "at(): ", index.size(), " indices for a ", describe(),
                 " tensor");
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) {
    DDPSCOPE_CHECK(index[i] >= 0 && index[i] < impl_->sizes[i], "at(): index ", index[i],
                   " out of range for dimension ", i, " of ", describe());
    off += index[i] * impl_->strides[i];
  }
  const double v = read_as_double(raw_data(), dtype(), off);
  return static_cast<T>(v);
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = (dtype() == DTypeOf<T>::value ? *this : to(DTypeOf<T>::value));
  if (!c.device().is_cpu()) c = c.to(Device::cpu());
  c = c.contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template float Tensor::at<float>(const std::vector<int64_t>&) const;
template double Tensor::at<double>(const std::vector<int64_t>&) const;
template int64_t Tensor::at<int64_t>(const std::vector<int64_t>&) const;
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

Tensor Tensor::as_strided(const Shape& sizes, const Shape& strides, int64_t offset) const {
  DDPSCOPE_CHECK(sizes.size() == strides.size(), "as_strided: ", sizes.size(), " sizes but ", strides.size(),
                 " strides");
  // Bounds check: the furthest element must lie inside the storage.
  int64_t last = offset;
  bool empty_view = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) empty_view = true;
    last += (sizes[i] - 1) * strides[i];
  }
  const int64_t capacity = static_cast<int64_t>(impl_->storage->nbytes() / element_size(dtype()));
  DDPSCOPE_CHECK(empty_view || (offset >= 0 && last < capacity), "as_strided: view ", shape_str(sizes), " at offset ",
                 offset, " exceeds the storage of ", capacity, " elements");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->sizes = sizes;
  impl->strides = strides;
  impl->offset = offset;
  impl->dtype = impl_->dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::view(const Shape& shape) const {
  Shape out = shape;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      DDPSCOPE_CHECK(infer < 0, "view: only one dimension may be -1, got ", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) {
    DDPSCOPE_CHECK(known != 0 && numel() % known == 0, "view: cannot infer -1 in ", shape_str(shape), " for ",
                   describe());
    out[infer] = numel() / known;
  }
  DDPSCOPE_CHECK(shape_numel(out) == numel(), "view: shape ", shape_str(shape), " does not match the ", numel(),
                 " elements of ", describe());
  DDPSCOPE_CHECK(is_contiguous(), "view: ", describe(), " is not contiguous; call contiguous() first or use reshape");
  return as_strided(out, contiguous_strides(out), impl_->offset);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim(), "narrow");
  DDPSCOPE_CHECK(start >= 0 && length >= 0 && start + length <= impl_->sizes[d], "narrow: [", start, ", ",
                 start + length, ") is outside dimension ", d, " of ", describe());
  Shape sizes = impl_->sizes;
  sizes[d] = length;
  return as_strided(sizes, impl_->strides, impl_->offset + start * impl_->strides[d]);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  Shape sizes = impl_->sizes, strides = impl_->strides;
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  return as_strided(sizes, strides, impl_->offset);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  DDPSCOPE_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: ", dims.size(), " dims given for ", describe());
  Shape sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    DDPSCOPE_CHECK(!seen[d], "permute: dimension ", d, " repeated");
    seen[d] = true;
    sizes[i] = impl_->sizes[d];
    strides[i] = impl_->strides[d];
  }
  return as_strided(sizes, strides, impl_->offset);
}

Tensor Tensor::expand(const Shape& shape) const {
  DDPSCOPE_CHECK(shape.size() >= impl_->sizes.size(), "expand: cannot expand ", describe(), " to fewer dimensions ",
                 shape_str(shape));
  const size_t lead = shape.size() - impl_->sizes.size();
  Shape strides(shape.size(), 0);
  for (size_t i = 0; i < impl_->sizes.size(); ++i) {
    const int64_t have = impl_->sizes[i], want = shape[lead + i];
    DDPSCOPE_CHECK(have == want || have == 1, "expand: size ", have, " of dimension ", i, " of ", describe(),
                   " cannot broadcast to ", shape_str(shape));
    strides[lead + i] = (have == want) ? impl_->strides[i] : 0;
  }
  return as_strided(shape, strides, impl_->offset);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), dtype(), device());
  kernels::copy(out, *this);
  return out;
}

Tensor Tensor::to(DType target) const {
  if (target == dtype()) return *this;
  Tensor out = empty(sizes(), target, device());
  kernels::copy(out, *this);
  return out;
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  Tensor src = contiguous();
  Tensor out = empty(sizes(), dtype(), target);
  const size_t n = src.nbytes();
  if (n == 0) return out;
  if (target.is_cuda() && src.device().is_cpu()) {
    cuda::copy_host_to_device(out.raw_data(), src.raw_data(), n, target.index);
  } else if (target.is_cpu() && src.device().is_cuda()) {
    cuda::copy_device_to_host(out.raw_data(), src.raw_data(), n, src.device().index);
  } else {
    cuda::copy_device_to_device(out.raw_data(), src.raw_data(), n, target.index);
  }
  return out;
}

const Tensor& Tensor::copy_(const Tensor& src) const {
  DDPSCOPE_CHECK(src.sizes() == sizes() || shape_numel(src.sizes()) == 1, "copy_: source ", src.describe(),
                 " does not match destination ", describe());
  Tensor s = src;
  if (s.device() != device()) s = s.to(device());
  if (s.sizes() != sizes()) s = s.expand(sizes());
  kernels::copy(*this, s);
  bump_version();
  return *this;
}

const Tensor& Tensor::fill_(double value) const {
  kernels::fill(*this, value);
  bump_version();
  return *this;
}

}  // namespace ddpscope
