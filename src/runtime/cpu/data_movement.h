// Byte-moving helpers shared by the data-movement kernels (Transpose, Slice, Pad, Tile, …).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ptq/ir.h"

namespace ptq::runtime::cpu {

// Fills a dense tensor of shape `out_shape` (elements of `elem_size` bytes at `dst`) with
// src[base + sum_d idx[d] * src_strides[d]] (strides in elements, may be negative or zero).
// Rows of the innermost dim are memcpy'd when their source is contiguous. Work is split over
// rows on `threads` threads; the result does not depend on the split.
void strided_copy(size_t elem_size, const ir::Shape& out_shape, const std::byte* src,
                  int64_t base, const std::vector<int64_t>& src_strides, std::byte* dst,
                  int threads);

}  // namespace ptq::runtime::cpu
