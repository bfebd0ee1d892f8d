// The instruction-set levels: which one this CPU runs, read once from cpuid.
#include <array>
#include <string>

#include "ptq/runtime.h"

namespace ptq::runtime {

namespace {

constexpr std::array<const char*, 4> kNames = {"auto", "baseline", "avx2", "avx512"};

// AVX-512 here is x86-64-v4's set (F, CD, BW, DQ, VL); AVX2 is x86-64-v3's core (AVX2, FMA,
// BMI2, F16C). libgcc's cpuid reading also checks that the OS saves the wider registers.
CpuIsa detect() {
#if defined(PTQ_ISA_LEVELS_ALL) && (defined(__x86_64__) || defined(__i386__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")) {
    return CpuIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c")) {
    return CpuIsa::kAvx2;
  }
#endif
  return CpuIsa::kBaseline;
}

}  // namespace

std::string cpu_isa_name(CpuIsa isa) { return kNames[static_cast<size_t>(isa)]; }

Expected<CpuIsa> parse_cpu_isa(const std::string& name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<CpuIsa>(i);
  }
  return usage_error("unknown CPU instruction set '{}' (auto, baseline, avx2 or avx512)", name);
}

CpuIsa best_cpu_isa() {
  static const CpuIsa best = detect();
  return best;
}

Expected<CpuIsa> resolve_cpu_isa(CpuIsa requested) {
  const CpuIsa best = best_cpu_isa();
  if (requested == CpuIsa::kAuto) return best;
  if (static_cast<int>(requested) > static_cast<int>(best)) {
    return usage_error("cpu: {} kernels asked for, but this CPU and build run at most {}",
                       cpu_isa_name(requested), cpu_isa_name(best));
  }
  return requested;
}

}  // namespace ptq::runtime
