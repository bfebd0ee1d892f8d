// Eigen as an instruction-set level's own code: included once, right after isa_begin.h, by the
// file that runs Eigen (gemm_kernel.cpp), which includes the standard headers Eigen/Core does
// before isa_begin.h. docs/DESIGN.md, "Instruction sets", says why it is done this way.
// - Eigen chooses its packets (SSE2, AVX + FMA, AVX-512) from __AVX__, __AVX2__, __FMA__ and
//   __AVX512F__, which GCC does not define for a `#pragma GCC target`: they are defined here for
//   the level, around Eigen's include only (the intrinsics themselves come from immintrin.h,
//   included before the pragma with their own target attributes).
// - Eigen is all templates and inline functions: with one name at every level, the linker would
//   keep one level's instantiation for all callers (an AVX-512 gebp kernel run by the baseline
//   path). `Eigen` is a macro for a namespace of the level's own (ptq_eigen_avx2, ...), so each
//   level's Eigen has its own symbols.
#if !defined(PTQ_ISA_NS) || defined(Eigen)
#error "eigen_level.h goes once, right after isa_begin.h"
#endif

#define PTQ_EIGEN_CONCAT(a, b) a##b
#define PTQ_EIGEN_NAMESPACE(level) PTQ_EIGEN_CONCAT(ptq_eigen_, level)
#define Eigen PTQ_EIGEN_NAMESPACE(PTQ_ISA_NS)

#if PTQ_AVX2 && !defined(__AVX2__)
#define PTQ_EIGEN_DEFINED_AVX2
#define __AVX__ 1
#define __AVX2__ 1
#define __FMA__ 1
#endif
#if PTQ_AVX512 && !defined(__AVX512F__)
#define PTQ_EIGEN_DEFINED_AVX512
#define __AVX512F__ 1
#define __AVX512DQ__ 1
#endif

#include <Eigen/Core>

#ifdef PTQ_EIGEN_DEFINED_AVX512
#undef __AVX512F__
#undef __AVX512DQ__
#undef PTQ_EIGEN_DEFINED_AVX512
#endif
#ifdef PTQ_EIGEN_DEFINED_AVX2
#undef __AVX__
#undef __AVX2__
#undef __FMA__
#undef PTQ_EIGEN_DEFINED_AVX2
#endif
