// The split-K rule (split_k.h) on the H100's ResNet-18 batch-32 convolutions (132 blocks fill
// it) and on forced and degenerate cuts. No device needed.
#include "split_k.h"

#include <gtest/gtest.h>

namespace ptq::vulkan {
namespace {

constexpr int64_t kH100 = 132;

TEST(VulkanSplitK, AutoSplitsOnlyUnderfilledOutputs) {
  // layer1 3x3 (64 x 100352, k 576) and layer2 (128 x 25088, k 1152) fill the device.
  EXPECT_EQ(split_k(kH100, 64, 100352, 1, 576, 0).splits, 1);
  EXPECT_EQ(split_k(kH100, 128, 25088, 1, 1152, 0).splits, 1);
  // layer3 (256 x 6272: 98 blocks) -> ceil(528 / 98) = 6 slices of k 2304 (384 each).
  const SplitK l3 = split_k(kH100, 256, 6272, 1, 2304, 0);
  EXPECT_EQ(l3.splits, 6);
  EXPECT_EQ(l3.k_split, 384);
  // layer3.0.conv1 (k 1152) is capped by the 256-long minimum: 4 slices.
  EXPECT_EQ(split_k(kH100, 256, 6272, 1, 1152, 0).splits, 4);
  // layer4 (512 x 1568: 52 blocks) -> 11 slices of k 4608 (432 each, rounded to 16).
  const SplitK l4 = split_k(kH100, 512, 1568, 1, 4608, 0);
  EXPECT_EQ(l4.splits, 11);
  EXPECT_EQ(l4.k_split, 432);
  // One block at batch 1: capped at 16 slices.
  EXPECT_EQ(split_k(kH100, 512, 49, 1, 4608, 0).splits, 16);
  // lavapipe (4 blocks fill it): only a single-block output splits.
  EXPECT_EQ(split_k(4, 256, 6272, 1, 2304, 0).splits, 1);
  EXPECT_EQ(split_k(4, 64, 100, 1, 2304, 0).splits, 9);
}

TEST(VulkanSplitK, ForcedAndOffAndDegenerate) {
  EXPECT_EQ(split_k(kH100, 64, 100352, 1, 576, 3).splits, 2);  // 576 / 256 caps it
  EXPECT_EQ(split_k(kH100, 512, 1568, 1, 4608, 1).splits, 1);  // off
  const SplitK odd = split_k(kH100, 24, 200, 1, 603, 2);       // K not a multiple of 16
  EXPECT_EQ(odd.splits, 2);
  EXPECT_EQ(odd.k_split, 304);
  EXPECT_EQ(split_k(kH100, 8, 8, 1, 200, 0).splits, 1);  // K under 512
  // Partial sums past 32-bit indexing: no split.
  EXPECT_EQ(split_k(kH100, 1 << 16, 1 << 14, 1, 4608, 4).splits, 1);
}

}  // namespace
}  // namespace ptq::vulkan
