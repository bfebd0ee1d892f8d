// Conv: geometry, the reference kernel, and the fast float32 2-D kernels.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "spatial.h"

namespace ptq::runtime::cpu {

// A convolution resolved against actual shapes. Layout NC<spatial>; weights M x C/G x <kernel>.
struct ConvParams {
  int64_t N = 0, C = 0, M = 0, G = 1;
  std::vector<int64_t> in, out;  // spatial dims of X and Y
  Window w;
};

// Output clamp applied after bias (fused Relu/Clip); the default is no clamp.
struct Clamp {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
};

namespace reference {
// Plain loops over every output element and kernel tap, accumulating in double. Any rank.
template <typename T>
void conv(const ConvParams& p, const T* x, const T* w, const T* b, T* y);
extern template void conv<float>(const ConvParams&, const float*, const float*, const float*, float*);
extern template void conv<double>(const ConvParams&, const double*, const double*, const double*,
                                  double*);
}  // namespace reference

// Fast float32 convolution for 1-D and 2-D (im2col + Eigen GEMM in fixed tiles, plain GEMM for
// 1x1, direct depthwise). Returns false when the shape is not handled (caller uses the reference).
bool conv_fast(const ConvParams& p, const float* x, const float* w, const float* b, float* y,
               Clamp clamp, int threads);

}  // namespace ptq::runtime::cpu
