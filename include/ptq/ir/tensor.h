// Tensor: dtype, concrete shape and storage that is either owned (64-byte aligned) or borrowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ptq/ir/dtype.h"

namespace ptq::ir {

using Shape = std::vector<int64_t>;

// Number of elements of a shape (1 for a scalar, 0 if any dim is 0).
int64_t num_elements(const Shape& shape);
// "[1, 3, 224, 224]"
std::string shape_str(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  // Owned storage, zero-filled.
  Tensor(DType dtype, Shape shape);
  // A view over memory owned elsewhere; the caller keeps it alive longer than the view.
  static Tensor borrow(DType dtype, Shape shape, void* data);
  static Tensor borrow(DType dtype, Shape shape, const void* data);

  // Copies deep-copy owned storage; a copy of a borrowed tensor borrows the same memory.
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i)]; }
  int64_t size() const { return num_elements(shape_); }
  size_t nbytes() const;
  bool empty() const { return dtype_ == DType::kUndefined; }
  bool owns_data() const { return owned_ != nullptr; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() { return static_cast<T*>(data_); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }
  template <typename T>
  std::span<T> span() { return {data<T>(), static_cast<size_t>(size())}; }
  template <typename T>
  std::span<const T> span() const { return {data<T>(), static_cast<size_t>(size())}; }

  // Same bytes, new shape with the same element count (a view when borrowed, a copy when owned).
  Tensor reshaped(Shape shape) const;
  // A borrowed view of this tensor's storage.
  Tensor view() const;

  // String tensors keep their elements here (data() is null for them).
  std::vector<std::string>& strings() { return strings_; }
  const std::vector<std::string>& strings() const { return strings_; }

  // Element i converted to double / int64 (for small tensors: shapes, axes, scalars).
  double as_double(int64_t i) const;
  int64_t as_int64(int64_t i) const;

 private:
  struct FreeDeleter {
    FreeDeleter() noexcept : mapped(0) {}
    explicit FreeDeleter(size_t bytes) noexcept : mapped(bytes) {}
    size_t mapped;  // bytes from map_pages(), else 0 (malloc)
    void operator()(std::byte* p) const;
  };
  void allocate();

  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::unique_ptr<std::byte, FreeDeleter> owned_;
  void* data_ = nullptr;
  std::vector<std::string> strings_;
};

// Builds an owned tensor from values.
template <typename T>
Tensor make_tensor(Shape shape, std::span<const T> values) {
  Tensor t(dtype_of<T>(), std::move(shape));
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}
template <typename T>
Tensor make_tensor(Shape shape, std::initializer_list<T> values) {
  return make_tensor<T>(std::move(shape), std::span<const T>(values.begin(), values.size()));
}

}  // namespace ptq::ir
