#include "ptq/ir/tensor.h"

#include "ptq/ir/pages.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ptq::ir {

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

void Tensor::FreeDeleter::operator()(std::byte* p) const {
  if (mapped > 0) {
    unmap_pages(p, mapped);
  } else {
    std::free(p);
  }
}

namespace {
// AddressSanitizer checks heap blocks, not mappings: sanitized builds keep every tensor on the
// heap so that overruns of large tensors are still caught.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapLarge = false;
#else
constexpr bool kMapLarge = true;
#endif
}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) { allocate(); }

void Tensor::allocate() {
  if (dtype_ == DType::kString) {
    strings_.assign(static_cast<size_t>(size()), std::string());
    return;
  }
  const size_t bytes = nbytes();
  // 64-byte alignment for SIMD kernels; aligned_alloc needs a multiple of the alignment.
  const size_t rounded = ((bytes + 63) / 64) * 64;
  if (rounded == 0) return;
  if (kMapLarge && rounded >= kMapPagesFrom) {  // zeroed already
    std::byte* p = map_pages(rounded);
    owned_ = std::unique_ptr<std::byte, FreeDeleter>(p, FreeDeleter{rounded});
    data_ = p;
    return;
  }
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, rounded));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  owned_.reset(p);
  data_ = p;
}

Tensor Tensor::borrow(DType dtype, Shape shape, void* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::borrow(DType dtype, Shape shape, const void* data) {
  // Views of constant data are never written through by kernels (inputs are const Tensor&).
  return borrow(dtype, std::move(shape), const_cast<void*>(data));  // NOLINT
}

Tensor::Tensor(const Tensor& other) : dtype_(other.dtype_), shape_(other.shape_) {
  strings_ = other.strings_;
  if (other.owned_) {
    allocate();
    if (nbytes() > 0) std::memcpy(data_, other.data_, nbytes());
  } else {
    data_ = other.data_;
  }
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    Tensor copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Tensor::Tensor(Tensor&& other) noexcept
    : dtype_(other.dtype_),
      shape_(std::move(other.shape_)),
      owned_(std::move(other.owned_)),
      data_(other.data_),
      strings_(std::move(other.strings_)) {
  other.dtype_ = DType::kUndefined;
  other.data_ = nullptr;
  other.shape_.clear();
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    owned_ = std::move(other.owned_);
    data_ = other.data_;
    strings_ = std::move(other.strings_);
    other.dtype_ = DType::kUndefined;
    other.data_ = nullptr;
    other.shape_.clear();
  }
  return *this;
}

size_t Tensor::nbytes() const { return static_cast<size_t>(size()) * dtype_size(dtype_); }

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = owns_data() ? Tensor(*this) : view();
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::view() const {
  Tensor t = borrow(dtype_, shape_, data_);
  t.strings_ = strings_;
  return t;
}

double Tensor::as_double(int64_t i) const {
  switch (dtype_) {
    case DType::kFloat32: return data<float>()[i];
    case DType::kFloat64: return data<double>()[i];
    case DType::kFloat16: return half_to_float(data<uint16_t>()[i]);
    case DType::kBFloat16: return bfloat16_to_float(data<uint16_t>()[i]);
    case DType::kInt8: return data<int8_t>()[i];
    case DType::kUInt8: return data<uint8_t>()[i];
    case DType::kInt16: return data<int16_t>()[i];
    case DType::kUInt16: return data<uint16_t>()[i];
    case DType::kInt32: return data<int32_t>()[i];
    case DType::kInt64: return static_cast<double>(data<int64_t>()[i]);
    case DType::kUInt32: return data<uint32_t>()[i];
    case DType::kUInt64: return static_cast<double>(data<uint64_t>()[i]);
    case DType::kBool: return data<bool>()[i] ? 1.0 : 0.0;
    default: return 0.0;
  }
}

int64_t Tensor::as_int64(int64_t i) const {
  switch (dtype_) {
    case DType::kInt64: return data<int64_t>()[i];
    case DType::kInt32: return data<int32_t>()[i];
    case DType::kUInt64: return static_cast<int64_t>(data<uint64_t>()[i]);
    default: return static_cast<int64_t>(as_double(i));
  }
}

}  // namespace ptq::ir
