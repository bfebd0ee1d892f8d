// Convolution kernel calls timed alone (docs/perf-history.md, CPU runtime), with Clip(0, 6) fused
// as in MobileNetV2, on random inputs (fixed seed), by the kernel the CPU Conv kernel picks for the
// shape (conv_lanes where it applies, else conv_fast; not Winograd), weights packed ahead, at the
// build's highest instruction-set level (AVX-512 with GCC on x86-64).
//   conv_bench conv N C M H K S THREADS REPS [GROUPS]
//       a KxK conv, stride S, "same" pads, C -> M channels at HxH, batch N, in GROUPS groups
//       (default 1; C = M = GROUPS: depthwise); the input is written once, so at a large batch
//       it is read from memory as the first op of a pass reads it
//   conv_bench block E H THREADS REPS [shared|private]
//       MobileNetV2's inverted residual at HxH: 1x1 64 -> E, depthwise 3x3 E, 1x1 E -> 64, in a
//       loop, at batch 1; prints the mean time of each of the first two. `private`: the last
//       conv reads another buffer than the depthwise conv's output (what the depthwise conv
//       costs when no other op has read its output lines since it last wrote them).
// Prints microseconds a call.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "isa_begin.h"  // the kernels of the build's highest instruction-set level (PTQ_ISA)
#include "conv.h"
#include "gemm_packed.h"
#include "isa_end.h"

using namespace ptq::runtime::cpu;
using namespace ptq::runtime::cpu::PTQ_ISA_NS;
using Clock = std::chrono::steady_clock;

namespace {

std::vector<float> randoms(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

ConvParams params(int64_t n, int64_t c, int64_t m, int64_t g, int64_t h, int64_t k, int64_t s) {
  ConvParams p;
  p.N = n, p.C = c, p.M = m, p.G = g;
  p.in = {h, h};
  const int64_t pad = k / 2, out = (h + 2 * pad - k) / s + 1;
  p.out = {out, out};
  p.w.kernel = {k, k};
  p.w.strides = {s, s};
  p.w.dilations = {1, 1};
  p.w.pads = {pad, pad, pad, pad};
  return p;
}

int64_t out_floats(const ConvParams& p) { return p.N * p.M * p.out[0] * p.out[1]; }

// A conv, its weights packed for the kernel that computes it.
struct Conv {
  ConvParams p;
  bool lanes;
  std::vector<float> w, b, packed;
  Conv(const ConvParams& params, unsigned seed) : p(params), lanes(conv_lanes_applies(params)) {
    const int64_t k = p.C / p.G * p.w.kernel[0] * p.w.kernel[1];
    w = randoms(static_cast<size_t>(p.M * k), -0.1f, 0.1f, seed);
    b = randoms(static_cast<size_t>(p.M), -0.1f, 0.1f, seed + 1);
    if (lanes) {
      packed.resize(static_cast<size_t>(lanes_weight_floats(p.M, k)));
      pack_lanes_weights(w.data(), p.M, k, packed.data());
    } else if (p.G == 1) {
      packed.resize(static_cast<size_t>(packed_a_floats(p.M, k)));
      pack_conv_weights(w.data(), p.M, 1, k, packed.data());
    }
  }
  void run(const float* x, float* y, int threads) const {
    ConvEpilogue e;
    e.act = Activation::kClip, e.lo = 0.0f, e.hi = 6.0f;
    if (lanes) {
      conv_lanes(p, x, packed.data(), b.data(), y, e, threads);
    } else {
      conv_fast(p, x, w.data(), p.G == 1 ? packed.data() : nullptr, b.data(), y, e, threads);
    }
  }
};

double micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

int one_conv(char** a, int64_t groups) {
  const Conv conv(params(std::atol(a[0]), std::atol(a[1]), std::atol(a[2]), groups,
                         std::atol(a[3]), std::atol(a[4]), std::atol(a[5])),
                  1);
  const int threads = std::atoi(a[6]), reps = std::atoi(a[7]);
  const ConvParams& p = conv.p;
  const std::vector<float> x =
      randoms(static_cast<size_t>(p.N * p.C * p.in[0] * p.in[1]), -1.0f, 1.0f, 3);
  std::vector<float> y(static_cast<size_t>(out_floats(p)));
  for (int i = 0; i < 3; ++i) conv.run(x.data(), y.data(), threads);
  const auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) conv.run(x.data(), y.data(), threads);
  std::printf("conv N=%ld C=%ld M=%ld H=%ld K=%s S=%s threads=%d: %.2f us\n", p.N, p.C, p.M,
              p.in[0], a[4], a[5], threads, micros(t0, Clock::now()) / reps);
  return 0;
}

int block(char** a, bool shared) {
  const int64_t e = std::atol(a[0]), h = std::atol(a[1]);
  const int threads = std::atoi(a[2]), reps = std::atoi(a[3]);
  const Conv expand(params(1, 64, e, 1, h, 1, 1), 1), depthwise(params(1, e, e, e, h, 3, 1), 2),
      project(params(1, e, 64, 1, h, 1, 1), 3);
  const std::vector<float> x = randoms(static_cast<size_t>(64 * h * h), -1.0f, 1.0f, 4);
  std::vector<float> y(static_cast<size_t>(e * h * h)), z(y.size()), other(y.size(), 0.5f);
  std::vector<float> out(x.size());
  double te = 0.0, td = 0.0;
  for (int i = 0; i < reps + 10; ++i) {
    const auto t0 = Clock::now();
    expand.run(x.data(), y.data(), threads);
    const auto t1 = Clock::now();
    depthwise.run(y.data(), z.data(), threads);
    const auto t2 = Clock::now();
    project.run(shared ? z.data() : other.data(), out.data(), threads);
    if (i >= 10) te += micros(t0, t1), td += micros(t1, t2);
  }
  std::printf("block E=%ld H=%ld threads=%d %s: 1x1 %.2f us, depthwise %.2f us\n", e, h, threads,
              shared ? "shared" : "private", te / reps, td / reps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "conv" && (argc == 10 || argc == 11)) {
    return one_conv(argv + 2, argc == 11 ? std::atol(argv[10]) : 1);
  }
  if (mode == "block" && (argc == 6 || argc == 7)) {
    return block(argv + 2, argc == 6 || std::string(argv[6]) != "private");
  }
  std::fprintf(stderr,
               "usage: conv_bench conv N C M H K S THREADS REPS [GROUPS]\n"
               "       conv_bench block E H THREADS REPS [shared|private]\n");
  return 2;
}
