// Opens the part of a kernel file that is compiled once per instruction-set level (PTQ_ISA from
// the build: 0 baseline x86-64, 1 AVX2 + FMA, 2 AVX-512; docs/DESIGN.md, "Instruction sets").
// Every header outside the level's own (std, kernel_util.h) is included HERE, before the
// `#pragma GCC target`: inline and template functions they define are then compiled for the
// baseline in every copy of the file, so the linker's choice among their identical copies can
// never hand AVX-512 code to a baseline caller (an ODR violation that would fault on older
// CPUs). After the pragma only the level's namespace (PTQ_ISA_NS) is defined; its headers
// (conv.h, gemm_packed.h, elementwise_util.h's loops, eigen_level.h's Eigen, ...) are included
// after this one. isa_end.h closes the region.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "elementwise_base.h"
#include "erf.h"
#include "exp.h"
#include "gemm_kernel.h"
#include "kernel_util.h"
#include "registry.h"

#if !defined(PTQ_ISA)
#error "PTQ_ISA is set by the build for the files compiled once per instruction-set level"
#endif

// PTQ_AVX512 / PTQ_AVX2 / PTQ_BMI2: the instruction sets the level's code may use (GCC does not
// define __AVX512F__ and friends for a `#pragma GCC target` in C++).
#if PTQ_ISA == 2
#define PTQ_ISA_NS avx512
#define PTQ_AVX512 1
#define PTQ_AVX2 1
#define PTQ_BMI2 1
#pragma GCC push_options
#pragma GCC target( \
    "avx512f,avx512cd,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt")
// GCC 12's own AVX-512 intrinsics (`__m512 __Y = __Y;` in _mm512_undefined_ps) read as
// uninitialized once inlined under a target pragma (GCC bug 105593). The same source compiled at
// the other levels still gets the warning for its own variables.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#elif PTQ_ISA == 1
#define PTQ_ISA_NS avx2
#define PTQ_AVX512 0
#define PTQ_AVX2 1
#define PTQ_BMI2 1
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi,bmi2,lzcnt,popcnt")
#else
#define PTQ_ISA_NS baseline
#define PTQ_AVX512 0
#define PTQ_AVX2 0
#define PTQ_BMI2 0
#endif
