// Tensor: a typed, strided view (sizes, strides, storage offset) into a shared Storage.
// Several tensors may view one storage (narrow, transpose, reshape of a contiguous
// tensor); DDP's gradient-as-bucket-view relies on that.
//
// Tensor is a cheap handle (one shared_ptr). Math lives in free functions: `kernels::`
// (no autograd, tensor/kernels.h) and `ddpscope::` (differentiable, autograd/ops.h).
// The autograd methods declared at the bottom are defined by the autograd layer, so this
// header does not depend on it.
//
//   Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
//   Tensor t = a.transpose(0, 1);           // a view: no copy
//   float x = t.at<float>({0, 1});          // 3
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "device.h"
#include "dtype.h"
#include "storage.h"

namespace ddpscope {

namespace autograd {
struct AutogradMeta;
class Node;
}  // namespace autograd

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;
  int64_t offset = 0;  // in elements
  DType dtype = DType::F32;
  std::shared_ptr<autograd::AutogradMeta> autograd_meta;  // null: plain data
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories ----
  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = {});
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = {});
  static Tensor ones(const Shape& shape, DType dtype = DType::F32, Device device = {});
  static Tensor full(const Shape& shape, double value, DType dtype = DType::F32, Device device = {});
  static Tensor scalar(double value, DType dtype = DType::F32);
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  static Tensor arange(int64_t n, DType dtype = DType::I64);

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& sizes() const { return impl_->sizes; }
  const Shape& strides() const { return impl_->strides; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  int64_t numel() const { return shape_numel(impl_->sizes); }
  int64_t storage_offset() const { return impl_->offset; }
  DType dtype() const { return impl_->dtype; }
  Device device() const { return impl_->storage->device(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(dtype()); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  // The same elements in the same layout: a view of exactly what `other` views.
  bool is_same_view_as(const Tensor& other) const {
    return defined() && other.defined() && impl_->storage == other.impl_->storage &&
           impl_->offset == other.impl_->offset && impl_->sizes == other.impl_->sizes &&
           impl_->strides == other.impl_->strides;
  }
  bool shares_storage_with(const Tensor& other) const { return impl_->storage == other.impl_->storage; }
  // "f32[64, 1024]" (plus "@cuda:0" off the CPU): used in every error message.
  std::string describe() const;
  // True when no other tensor or view can reach this one's bytes: a sender may then
  // hand the storage to the network without copying it.
  bool is_sole_owner_of_storage() const { return impl_.use_count() == 1 && impl_->storage.use_count() == 1; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  // ---- element access (CPU) ----
  void* raw_data() const;  // address of element 0 of this view
  template <typename T>
  T* data() const;
  template <typename T>
  T item() const;
  template <typename T>
  T at(const std::vector<int64_t>& index) const;
  template <typename T>
  std::vector<T> to_vector() const;  // contiguous copy in row-major order

  // ---- views: share storage, no copy, no autograd (see autograd/ops.h for those) ----
  Tensor as_strided(const Shape& sizes, const Shape& strides, int64_t offset) const;
  Tensor view(const Shape& shape) const;  // needs a contiguous tensor; one -1 allowed
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor expand(const Shape& shape) const;  // broadcast with stride 0
  Tensor flatten() const { return view({-1}); }

  // ---- copies ----
  Tensor contiguous() const;  // this if already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  const Tensor& copy_(const Tensor& src) const;  // in place; converts dtype/device; shapes must match
  const Tensor& fill_(double value) const;
  const Tensor& zero_() const { return fill_(0.0); }
  void bump_version() const { impl_->storage->bump_version(); }

  // ---- autograd (defined in autograd/variable.cpp) ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool value = true);
  bool is_leaf() const;
  const Tensor& grad() const;  // undefined Tensor when there is none
  void set_grad(Tensor grad) const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  uint32_t output_nr() const;
  // Accumulates d(this)/d(leaves) into each leaf's grad. A scalar needs no `gradient`.
  void backward(const Tensor& gradient = {}, bool retain_graph = false) const;
  // The hook sees the gradient flowing into this tensor and may return a replacement.
  using GradHook = std::function<std::optional<Tensor>(const Tensor&)>;
  void register_hook(GradHook hook) const;
  void retain_grad() const;  // keep .grad on a non-leaf
  Tensor detach() const;     // same data, no history
  // Name shown in graphs and errors (parameters get their module path).
  const std::string& name() const;
  void set_name(std::string name) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// ---- template definitions ----
template <typename T>
T* Tensor::data() const {
  DDPSCOPE_CHECK(dtype() == DTypeOf<T>::value, "data<", dtype_name(DTypeOf<T>::value), ">() called on a ", describe(),
                 " tensor");
  return static_cast<T*>(raw_data());
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  DDPSCOPE_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
                 " values do not fill shape ", shape_str(shape));
  Tensor t = empty(shape, DTypeOf<T>::value);
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

}  // namespace ddpscope
