// The CPU's fp32 FMA peak, the yardstick for the convolution kernels' efficiency in
// docs/perf-history.md: every thread runs independent AVX-512 (or AVX2) FMA chains, enough of them
// to cover the FMA latency, on registers only.
//   fma_peak [THREADS...]   (default: 1 and all)
// GCC 12's own avx512fintrin.h (`__m512 __Y = __Y;`) trips -Wuninitialized: a false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kChains = 12;        // FMA latency 4 x 2 ports = 8 in flight, and some room
constexpr long kSteps = 100'000'000;

__attribute__((target("avx512f"))) float chains512() {
  __m512 acc[kChains];
  const __m512 b = _mm512_set1_ps(1.0000001f), c = _mm512_set1_ps(1e-8f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  for (long k = 0; k < kSteps; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], b, c);
  }
  float r = 0;
  for (int i = 0; i < kChains; ++i) r += _mm512_reduce_add_ps(acc[i]);
  return r;
}

__attribute__((target("avx2,fma"))) float chains256() {
  __m256 acc[kChains];
  const __m256 b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-8f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  for (long k = 0; k < kSteps; ++k) {
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], b, c);
  }
  float r = 0;
  alignas(32) float lanes[8];
  for (int i = 0; i < kChains; ++i) {
    _mm256_store_ps(lanes, acc[i]);
    for (float v : lanes) r += v;
  }
  return r;
}

// GFLOP/s of `threads` threads each running the chains once.
double peak(int threads, bool avx512) {
  const int lanes = avx512 ? 16 : 8;
  std::vector<float> sink(static_cast<size_t>(threads));
  const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads)
  sink[static_cast<size_t>(omp_get_thread_num())] = avx512 ? chains512() : chains256();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  float keep = 0;
  for (float v : sink) keep += v;
  if (keep == 1.2345f) std::puts("");  // keeps the work alive
  return static_cast<double>(threads) * kSteps * kChains * lanes * 2.0 / s / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1, omp_get_max_threads()};
  for (int t : counts) {
    std::printf("fma_peak threads=%d isa=%s gflops=%.1f\n", t, avx512 ? "avx512" : "avx2",
                peak(t, avx512));
  }
  return 0;
}
