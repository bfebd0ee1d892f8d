// The mask of a 16-float AVX-512 vector's first n lanes, for the masked loads and stores of
// row tails (n <= 0: none; n >= 16: all).
#pragma once

#if !defined(PTQ_ISA_NS)
#error "include isa_begin.h first: this header is compiled once per instruction-set level"
#endif

#include <cstdint>

#if PTQ_AVX512
#include <immintrin.h>

namespace ptq::runtime::cpu::PTQ_ISA_NS {

inline __mmask16 lane_mask(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
#endif
