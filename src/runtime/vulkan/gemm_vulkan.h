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
};

// Block tile edge of the shader variant: 128 ("…_large") when there are enough output tiles
// to fill a GPU, else 64.
uint32_t gemm_tile(int64_t m, int64_t n, int64_t batch);

// Records C = act(alpha A·B + beta bias) for `batch` matrices (z of the dispatch).
Status record_gemm(Recorder& rec, const GemmPush& push, int64_t batch, const Binding& a,
                   const Binding& b, const Binding& bias, const Binding& c);

}  // namespace ptq::vulkan
