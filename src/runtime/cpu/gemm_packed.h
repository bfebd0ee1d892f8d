// Single-precision GEMM on packed operands with a register-blocked micro-kernel (AVX-512,
// AVX2 + FMA, or portable loops: one per instruction-set level, isa_begin.h). A constant
// operand (conv weights, a Gemm/MatMul weight matrix) is packed once when its kernel is
// prepared; only the other one is packed per call. One thread; callers tile and parallelise with a
// shape-only partition.
#pragma once

#if !defined(PTQ_ISA_NS)
#error "include isa_begin.h first: this header is compiled once per instruction-set level"
#endif

#include <cstdint>
#include <vector>

#include "epilogue.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

// The micro-kernel computes kGemmMR rows x kGemmNR columns of C in registers.
#if PTQ_AVX512
inline constexpr int64_t kGemmMR = 14;  // 28 zmm accumulators
inline constexpr int64_t kGemmNR = 32;
#elif PTQ_AVX2
inline constexpr int64_t kGemmMR = 6;  // 12 ymm accumulators
inline constexpr int64_t kGemmNR = 16;
#else
inline constexpr int64_t kGemmMR = 4;
inline constexpr int64_t kGemmNR = 16;
#endif

// Floats a packed A (m x k) / packed B (k x n) takes: whole panels, zero-padded.
inline int64_t packed_a_floats(int64_t m, int64_t k) {
  return (m + kGemmMR - 1) / kGemmMR * kGemmMR * k;
}
inline int64_t packed_b_floats(int64_t k, int64_t n) {
  return (n + kGemmNR - 1) / kGemmNR * kGemmNR * k;
}

// Packs op(A) (m x k; when trans, A is stored k x m) into panels of kGemmMR rows: panel p holds
// rows [p * MR, p * MR + MR) as k groups of MR floats (k-major), missing rows zero.
void pack_a(bool trans, int64_t m, int64_t k, const float* a, int64_t lda, float* out);

// Packs op(B) (k x n; when trans, B is stored n x k) into panels of kGemmNR columns: panel q
// holds columns [q * NR, q * NR + NR) as k groups of NR floats, missing columns zero.
void pack_b(bool trans, int64_t k, int64_t n, const float* b, int64_t ldb, float* out);

// What is applied to each element of C once its sum is complete, in this order: + row_bias[i],
// + residual[i * ldr + j] (a fused Add), then the activation (a fused Relu or Clip, epilogue.h).
struct GemmEpilogue {
  const float* row_bias = nullptr;
  const float* residual = nullptr;
  int64_t ldr = 0;
  Activation act = Activation::kNone;
  float lo = 0.0f, hi = 0.0f;  // kClip's bounds
  // Whole 64-byte-aligned vectors of C are written with non-temporal stores (past the caches,
  // without first reading the lines in): for an output far larger than the caches, which the
  // next op reads from memory anyway. The call ends with a store fence.
  bool stream = false;
};

// C[m x n] (row stride ldc) = A * B, then the epilogue, from packed operands (pa from pack_a
// of m rows, pb from pack_b of n columns, both with this k). Overwrites C. Each element is summed
// over k in order by the same code whatever the caller's tiling, so an element's value depends
// only on its row of A, its column of B and k.
void gemm_packed(int64_t m, int64_t n, int64_t k, const float* pa, const float* pb, float* c,
                 int64_t ldc, const GemmEpilogue& epilogue = {});

// C[m x n] (row stride ldc) = A * B, then the epilogue, where row q of B is the n floats from
// b + boff[q] (a "shifted" B: a stride-1 convolution's taps over a zero-padded input, or a 1x1
// convolution's input rows, so no copy is made). Columns are read in whole panels of kGemmNR:
// up to kGemmNR - 1 floats past column n are read (they must exist) and ignored. Elements are
// summed over k in order exactly as gemm_packed sums them. `far_rows`: B's rows lie far apart
// and may not be cached (a 1x1 convolution's input planes), so they are prefetched ahead; the
// values are the same either way. Returns false below the AVX-512 level.
bool gemm_shifted(int64_t m, int64_t n, int64_t k, const float* pa, const float* b,
                  const int64_t* boff, float* c, int64_t ldc, const GemmEpilogue& epilogue = {},
                  bool far_rows = false);

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
