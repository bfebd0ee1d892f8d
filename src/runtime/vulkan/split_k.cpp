// Measured on an H100 (docs/perf-history.md, ResNet-18 batch 32): layers 3 and 4, 98 and 52 blocks
// of 128x128, went from 0.70 and 0.57 ms a convolution to 0.29-0.32 and 0.34 ms with 6-12 slices,
// while splitting layers 1 and 2, which fill the device already, cost them 5-18%.
#include "split_k.h"

#include <algorithm>

namespace ptq::vulkan {

SplitK split_k(int64_t enough, int64_t m, int64_t n, int64_t groups, int64_t k, int64_t most) {
  int64_t want = most;
  if (most <= 0) {
    const int64_t blocks = (m + 127) / 128 * ((n + 127) / 128) * groups;
    want = blocks < enough ? (4 * enough + blocks - 1) / blocks : 1;
  }
  SplitK s;
  s.splits = std::clamp<int64_t>(k / 256, 1, std::clamp<int64_t>(want, 1, 16));
  if (s.splits * m * n * groups >= (int64_t{1} << 31)) s.splits = 1;
  s.k_split = ((k + s.splits - 1) / s.splits + 15) / 16 * 16;
  s.splits = (k + s.k_split - 1) / s.k_split;  // rounding k_split up may leave fewer slices
  return s;
}

}  // namespace ptq::vulkan
