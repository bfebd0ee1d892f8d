// What the elementwise kernel families share outside their loops: the split grain, an owning
// allocator, half-precision conversion and the broadcast row walk. Plain (not per-level) code,
// so the files compiled once per instruction-set level include it before the pragma
// (isa_begin.h); the loops are in elementwise_util.h.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kernel_util.h"

namespace ptq::runtime::cpu {

// Elements per thread below which splitting the work costs more than it saves.
inline constexpr int64_t kElementwiseGrain = 16384;

// Allocates from nothing: owned tensors for kernel-internal temporaries (and for unit tests).
class OwnedAllocator final : public Allocator {
 public:
  ir::Tensor allocate(ir::DType dtype, const ir::Shape& shape) override {
    return ir::Tensor(dtype, shape);
  }
};

inline bool is_half(ir::DType t) { return t == ir::DType::kFloat16 || t == ir::DType::kBFloat16; }

// Converts any tensor between numeric and bool dtypes (float16/bfloat16 included) as Cast does;
// defined in cast.cpp.
void convert_into(const ir::Tensor& in, ir::Tensor& out, int threads);
// An owned converted copy.
ir::Tensor convert(const ir::Tensor& in, ir::DType to, int threads);

// Offsets of the first element of each run of the innermost output dim, for broadcasting row by
// row: the innermost loop then has constant strides (0 or 1) for every input.
template <size_t N>
struct BroadcastRows {
  int64_t rows = 0;
  int64_t cols = 0;
  std::array<int64_t, N> col_stride{};  // 0 or 1
  std::array<std::vector<int64_t>, N> strides;
  ir::Shape out;

  BroadcastRows(const std::array<const ir::Shape*, N>& ins, const ir::Shape& out_shape)
      : out(out_shape) {
    cols = out.empty() ? 1 : out.back();
    rows = cols == 0 ? 0 : ir::num_elements(out) / cols;
    for (size_t k = 0; k < N; ++k) {
      strides[k] = broadcast_strides(*ins[k], out);
      col_stride[k] = out.empty() ? 0 : strides[k].back();
    }
  }
  // Element offset into input k of the first element of row r.
  int64_t row_offset(size_t k, int64_t r) const {
    int64_t off = 0;
    if (out.empty()) return 0;
    for (size_t d = out.size() - 1; d-- > 0 && r > 0;) {
      off += (r % out[d]) * strides[k][d];
      r /= out[d];
    }
    return off;
  }
};

}  // namespace ptq::runtime::cpu
