#include "scan_slices.h"

#include <cstring>

#include "ptq/runtime/op_attrs.h"

namespace ptq::runtime::cpu {

namespace {

// Copies `count` elements from src[from] to dst[to] (strings one by one).
void copy_elements(const ir::Tensor& src, int64_t from, ir::Tensor& dst, int64_t to,
                   int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == ir::DType::kString) {
    for (int64_t i = 0; i < count; ++i) {
      dst.strings()[static_cast<size_t>(to + i)] = src.strings()[static_cast<size_t>(from + i)];
    }
    return;
  }
  const size_t esize = ir::dtype_size(src.dtype());
  std::memcpy(static_cast<std::byte*>(dst.raw()) + static_cast<size_t>(to) * esize,
              static_cast<const std::byte*>(src.raw()) + static_cast<size_t>(from) * esize,
              static_cast<size_t>(count) * esize);
}

}  // namespace

ir::Tensor slice_at(const ir::Tensor& t, int64_t axis, int64_t index) {
  const ir::Shape& shape = t.shape();
  const auto a = static_cast<size_t>(axis);
  const int64_t outer = dims_product(shape, 0, a);
  const int64_t inner = dims_product(shape, a + 1, shape.size());
  ir::Shape sliced = shape;
  sliced.erase(sliced.begin() + static_cast<std::ptrdiff_t>(a));
  ir::Tensor out(t.dtype(), sliced);
  for (int64_t o = 0; o < outer; ++o) {
    copy_elements(t, (o * shape[a] + index) * inner, out, o * inner, inner);
  }
  return out;
}

Expected<ir::Tensor> stack(std::span<const ir::Tensor> parts, int64_t axis, bool reversed,
                           const std::string& what) {
  const ir::Tensor& first = parts.front();
  for (size_t i = 1; i < parts.size(); ++i) {
    if (parts[i].dtype() != first.dtype() || parts[i].shape() != first.shape()) {
      return invalid_input("{} is {} {} at iteration {} but {} {} at iteration 0", what,
                           ir::dtype_name(parts[i].dtype()), ir::shape_str(parts[i].shape()), i,
                           ir::dtype_name(first.dtype()), ir::shape_str(first.shape()));
    }
  }
  const auto a = static_cast<size_t>(axis);
  const auto n = static_cast<int64_t>(parts.size());
  const int64_t outer = dims_product(first.shape(), 0, a);
  const int64_t inner = dims_product(first.shape(), a, first.shape().size());
  ir::Shape shape = first.shape();
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(a), n);
  ir::Tensor out(first.dtype(), shape);
  for (int64_t i = 0; i < n; ++i) {
    const ir::Tensor& part = parts[static_cast<size_t>(reversed ? n - 1 - i : i)];
    for (int64_t o = 0; o < outer; ++o) {
      copy_elements(part, o * inner, out, (o * n + i) * inner, inner);
    }
  }
  return out;
}

}  // namespace ptq::runtime::cpu
