// Conv: geometry, the reference kernel, and the fast float32 2-D kernels.
#pragma once

#if !defined(PTQ_ISA_NS)
#error "include isa_begin.h first: this header is compiled once per instruction-set level"
#endif

#include <cstdint>
#include <vector>

#include "epilogue.h"
#include "kernel_util.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

// A convolution resolved against actual shapes. Layout NC<spatial>; weights M x C/G x <kernel>.
struct ConvParams {
  int64_t N = 0, C = 0, M = 0, G = 1;
  std::vector<int64_t> in, out;  // spatial dims of X and Y
  Window w;
};

// What a fused conv applies after its bias: + residual (laid out as y), then the activation.
struct ConvEpilogue {
  const float* residual = nullptr;
  Activation act = Activation::kNone;
  float lo = 0.0f, hi = 0.0f;  // kClip's bounds
};

namespace reference {
// Plain loops over every output element and kernel tap, accumulating in double. Any rank.
template <typename T>
void conv(const ConvParams& p, const T* x, const T* w, const T* b, T* y);
extern template void conv<float>(const ConvParams&, const float*, const float*, const float*,
                                 float*);
extern template void conv<double>(const ConvParams&, const double*, const double*, const double*,
                                  double*);
}  // namespace reference

// Packs conv weights (M x k per the ONNX layout, k = C/G x kernel taps) for the GEMM of the
// fast kernel: per group, pack_a of its M/G rows (gemm_packed.h); groups are
// packed_a_floats(M/G, k) floats apart. Done once when a Conv with constant weights is prepared.
void pack_conv_weights(const float* w, int64_t m, int64_t groups, int64_t k, float* out);

// Whether a conv's output of this many floats is written past the caches (GemmEpilogue::stream)
// by the kernels whose GEMM writes it in place: from 32 MiB, the last-level cache of the
// machines measured, so the next op would read it from memory anyway. MobileNetV2's 1x1
// expansion at 112x112, batch 32 (154 MB out): 31-35 -> 16-21 ms.
inline bool streams_output(int64_t floats) {
  return floats * int64_t{sizeof(float)} >= (int64_t{32} << 20);
}

// Whether the fast kernels handle this geometry (1-D and 2-D).
inline bool conv_fast_handles(const ConvParams& p) { return p.in.size() == 1 || p.in.size() == 2; }

// The algorithms that compute a float32 convolution.
enum class ConvAlgo {
  kReference,     // reference::conv (not 1-D or 2-D)
  kWinograd,      // conv_winograd
  kLanes,         // conv_lanes
  kDepthwise3x3,  // depthwise3x3
  kDepthwise,     // direct, on padded planes (conv_fast.cpp)
  kShifted,       // conv_shifted
  kGemm,          // packed GEMM on im2col columns or, for 1x1, the input (conv_fast.cpp)
};

// What the choice depends on besides the shapes.
struct ConvSetting {
  int threads = 1;
  bool winograd = false;  // Winograd allowed (CpuBackendOptions::winograd)
  bool packed = false;    // the weights are constant and packed ahead: Winograd and lanes need it
};

// The algorithm computing this call (conv_choice.cpp): the one place that orders the
// algorithms and asks each whether it applies.
ConvAlgo choose_conv(const ConvParams& p, const ConvSetting& s);

// The packed forms of its constant weights a conv may ask for at some call, from `p` without
// inputs (N and the spatial dims unknown, only their count set): a conv that can only ever
// take the GEMM packs it when prepared; one that may take Winograd or lanes packs, at its
// first call, the form choose_conv gives that call (holding both would cost 2.8x the weights).
struct ConvForms {
  bool winograd = false;
  bool lanes = false;
};
ConvForms conv_weight_forms(const ConvParams& p, bool winograd);

// Runs `algo` (kDepthwise3x3, kDepthwise, kShifted or kGemm) with the epilogue applied as
// each output tile is written. `packed_w` is pack_conv_weights' output or null (then the
// weights are packed for this call). False for other algorithms or a shape `algo` refuses.
bool conv_with(ConvAlgo algo, const ConvParams& p, const float* x, const float* w,
               const float* packed_w, const float* b, float* y, const ConvEpilogue& epilogue,
               int threads);

// Fast float32 convolution for 1-D and 2-D: conv_with the algorithm choose_conv gives
// without packed weights (never Winograd or lanes). Returns false when the shape is not
// handled (the caller uses the reference).
bool conv_fast(const ConvParams& p, const float* x, const float* w, const float* packed_w,
               const float* b, float* y, const ConvEpilogue& epilogue, int threads);

// Depthwise 2-D 3x3 conv, stride 1 or 2 (both dims alike), dilation 1, any pads, read in place
// (depthwise3x3.cpp; AVX-512 only). Returns false when it does not handle the shape.
bool depthwise3x3_applies(const ConvParams& p);
bool depthwise3x3(const ConvParams& p, const float* x, const float* w, const float* b, float* y,
                  const ConvEpilogue& epilogue, int threads);

// 2-D conv (G = 1, kernel larger than 1x1, any strides and dilations) as a GEMM of the packed
// weights with shifted rows of a zero-padded, stride-phase-split copy of the input, no im2col
// (conv_shifted.cpp; AVX-512 only). Returns false when it does not handle the shape or would
// waste too many columns. Whether it computes this call on `threads` threads:
bool conv_shifted_applies(const ConvParams& p, int threads);
bool conv_shifted(const ConvParams& p, const float* x, const float* packed_w, const float* b,
                  float* y, const ConvEpilogue& epilogue, int threads);

// Whether conv_shifted lays the images of this call side by side (an interleaved copy, for
// small outputs such as 7x7); results are the same bit for bit either way.
bool conv_shifted_interleaves(const ConvParams& p);

// 3x3, stride 1, dilation 1, G = 1 convolutions with enough channels and outputs, by Winograd's
// F(2x2, 3x3) (conv_winograd.cpp; AVX-512 only): whether it computes this call, and whether
// it may compute some call, from the weights and attributes alone (see conv_weight_forms).
bool conv_winograd_applies(const ConvParams& p);
bool conv_winograd_fits(const ConvParams& p);

// Floats of the transformed, packed weights of an M x C x 3 x 3 convolution, and the packing:
// the 16 matrices U_xi (M x C) of G g G^T, each packed with pack_a.
int64_t winograd_weight_floats(int64_t m, int64_t c);
void pack_winograd_weights(const float* w, int64_t m, int64_t c, float* out);

// Y = conv(X, W) + b, then the epilogue, from pack_winograd_weights' output. Each output
// depends on its own input patch only (same values whatever the batch or thread count); it
// differs from the direct sum by the transforms' rounding. Returns false when not applicable.
bool conv_winograd(const ConvParams& p, const float* x, const float* packed_u, const float* b,
                   float* y, const ConvEpilogue& e, int threads);

// Convolutions (G = 1) whose output planes fill the GEMMs' 32-position panels poorly (7x7,
// 14x14), computed with the output channels in the vector lanes instead (conv_lanes.cpp;
// AVX-512 only): 1x1 convs over enough input channels, and larger kernels at small batches
// (reading a padded copy of the input). Whether it computes this call, and whether it may
// compute some call, from the weights and attributes alone (see conv_weight_forms).
bool conv_lanes_applies(const ConvParams& p);
bool conv_lanes_fits(const ConvParams& p);
// Floats of the packed weights of an M x k conv (k = C x kernel taps; W^T in pack_b's panels
// of output channels), and the packing.
int64_t lanes_weight_floats(int64_t m, int64_t k);
void pack_lanes_weights(const float* w, int64_t m, int64_t k, float* out);
// Y = conv(X, W) + b, then the epilogue, from pack_lanes_weights' output: the same bits as
// conv_fast. Returns false when not applicable.
bool conv_lanes(const ConvParams& p, const float* x, const float* packed, const float* b, float* y,
                const ConvEpilogue& e, int threads);

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
