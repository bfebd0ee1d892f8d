// How an implicit-GEMM convolution's K is cut into slices (split-K): each slice's partial sums
// go to a buffer, and conv_splitk_reduce adds them in slice order (deterministic).
#pragma once

#include <cstdint>

namespace ptq::vulkan {

// `splits` slices of `k_split` elements (the last may be shorter).
struct SplitK {
  int64_t splits = 1;
  int64_t k_split = 0;
};

// The cut for an m x n output (per group, `groups` of them) summed over k. `most`:
// 1 never splits; above 1 splits every convolution into up to `most` slices; 0 (auto) splits
// only an output whose 128x128 tiles give fewer blocks than `enough` (blocks_to_fill: the
// device's multiprocessors), into slices for about four blocks each. Slices are at least 256
// long, a multiple of 16 (every tile's K step), at most 16; one slice when the partial sums
// would not fit 32-bit indexing.
SplitK split_k(int64_t enough, int64_t m, int64_t n, int64_t groups, int64_t k, int64_t most);

}  // namespace ptq::vulkan
