// The GEMM shader's parameters (gemm.comp), shared by Gemm/MatMul and 1x1 convolutions.
#pragma once

#include <cstdint>

#include "op.h"

namespace ptq::vulkan {

// Mirrors gemm.comp's push constants (non-CONV variant).
struct GemmPush {
  uint32_t M = 0, N = 0, K = 0;
  int32_t a_rs = 0, a_cs = 0, b_rs = 0, b_cs = 0;
  uint32_t batch1 = 1;
  int32_t a_bs0 = 0, a_bs1 = 0, b_bs0 = 0, b_bs1 = 0;
  int32_t c_bs = 0, c_rs = 0;
  uint32_t bias_mode = 0;  // 0 none, 1 per row, 2 per column, 3 matrix, 4 scalar
  int32_t bias_rs = 0, bias_cs = 0;
  float alpha = 1.0f, beta = 1.0f;
  uint32_t act = 0;  // 0 none, 1 relu, 2 clip
  float act_min = 0.0f, act_max = 0.0f;
  uint32_t flags =
      0;  // kVec*: operands the shader may read and write as aligned vec4 (record_gemm sets them)
};

// gemm.comp's flags: A is k-contiguous, B and C n-contiguous, and all 16-byte aligned.
constexpr uint32_t kVecA = 1, kVecB = 2, kVecC = 4;

// A block-tile shape of gemm.comp and the name suffix of its shader variant.
struct GemmTile {
  uint32_t m = 64, n = 64;
  const char* suffix = "";
};

// How many workgroups a dispatch needs to keep `ctx` busy: one per multiprocessor on a GPU.
int64_t blocks_to_fill(const Context& ctx);

// The largest block tile (128x128 "_l", 64x256 "_w", 64x128 "_m", 64x64) that still gives `ctx`
// enough blocks to keep busy and does not leave most of a tile's rows empty.
GemmTile gemm_tile(const Context& ctx, int64_t m, int64_t n, int64_t batch);

// Records C = act(alpha A·B + beta bias) for `batch` matrices (z of the dispatch), with the
// tile gemm_tile picks unless `tile` is given (the benchmark compares them).
Status record_gemm(Recorder& rec, const GemmPush& push, int64_t batch, const Binding& a,
                   const Binding& b, const Binding& bias, const Binding& c,
                   const GemmTile* tile = nullptr);

}  // namespace ptq::vulkan
