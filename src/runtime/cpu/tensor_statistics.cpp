// HostTensorStatistics: the min-max pass and the |x| histogram of specs/calibrators.md over a
// host tensor, in parallel on the task pool. The tensor is cut into fixed chunks (independent
// of the thread count); per-chunk min/max are combined in chunk order and each run of chunks
// is binned into a private histogram, summed in run order. Integer counts and min/max do not
// depend on order, so the results are bit-identical for any thread count. calibrators/histogram.cpp
// is the serial reference; tests hold the two equal.
#include "tensor_statistics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "ptq/runtime/task_pool.h"

namespace ptq::runtime::cpu {

namespace {

constexpr int kBins = 2048;
constexpr int64_t kChunk = int64_t{1} << 15;  // elements per work item

// The spec's bin rule, evaluated in float64 in exactly this order (= calib::histogram_bin).
inline int bin_of(double v, double T) {
  if (!(T > 0.0)) return 0;
  const double b = std::floor(v / T * 2048.0);
  return b >= static_cast<double>(kBins - 1) ? kBins - 1 : static_cast<int>(b);
}

struct Partial {
  double min = 0.0, max = 0.0;
  bool any = false;
  int64_t nonfinite = 0;
  int64_t first_nonfinite = -1;
};

template <typename Load>
Partial minmax_range(Load load, int64_t begin, int64_t end) {
  Partial p;
  double mn = 0.0, mx = 0.0;
  for (int64_t i = begin; i < end; ++i) {
    const double x = load(i);
    if (!std::isfinite(x)) {
      if (p.nonfinite++ == 0) p.first_nonfinite = i;
      continue;
    }
    if (!p.any) {
      mn = mx = x;
      p.any = true;
    } else {
      mn = std::min(mn, x);
      mx = std::max(mx, x);
    }
  }
  p.min = mn;
  p.max = mx;
  return p;
}

// float32 fast paths, in SIMD, for values that are all finite (the usual case). The min/max
// of floats taken in float equal those of the same values widened to double (widening is
// exact and monotone), and the bins are those of bin_of() (below), so both give exactly what
// the generic loops give. A chunk (min/max) or block (bins) with a NaN or Inf takes the
// generic loop, which skips such values (and finds the first one).

// The min/max of a chunk and whether all of it is finite, in one pass over memory. False when
// some value is NaN or Inf (`part` is then left as it was; the caller takes the generic loop).
bool minmax_finite(const float* p, int64_t begin, int64_t end, Partial& part) {
  if (begin >= end) return true;
  float mn = p[begin], mx = p[begin];
  int bad = 0;
#pragma omp simd reduction(min : mn) reduction(max : mx) reduction(| : bad)
  for (int64_t i = begin; i < end; ++i) {
    const float x = p[i];
    bad |= !(std::fabs(x) <= std::numeric_limits<float>::max());
    mn = std::min(mn, x);
    mx = std::max(mx, x);
  }
  if (bad != 0) return false;
  part.min = mn;
  part.max = mx;
  part.any = true;
  return true;
}

// GCC vectorises the double -> int bin conversion only when it may assume FP exceptions do not
// trap; that assumption changes no result (no reassociation, no contraction), only codegen.
// The option is set for the binning functions only: GCC does not inline a function compiled
// with other options into one under the pragma, so over the whole file it turned std::min,
// std::max and std::fabs(float) into out-of-line calls per element and left the min/max loops
// scalar (a min-max calibration pass cost ~40% over a plain forward pass). Inside, only
// builtins (floor, fabs of double) and plain arithmetic: no header function to fail to inline.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif
// The spec's bin, floor(v / T * 2048) in float64, without a division per value: q = v * (2048 /
// T) is within 3 ulp-of-2048 (< 7e-13) of the exact v / T * 2048 for v <= T (two roundings in
// each; times 2048 is exact), so floor(q) is the spec's bin unless q lies within kNearInteger of
// an integer. Those values (v an exact multiple of T / 2048, e.g. v = T) are binned again with
// the division; v = 0 is bin 0 both ways. From q >= 2047.5 on, both clamp to the last bin.
constexpr double kNearInteger = 1e-12;
// The largest finite float as a double: |x| <= it tells a finite value from NaN and Inf with
// builtins alone (std::numeric_limits and std::fabs(float) are header functions).
constexpr double kFloatMax = 3.4028234663852886e38;
static_assert(kFloatMax == static_cast<double>(std::numeric_limits<float>::max()));

// bin_of() of a float, with the division, written out here: GCC does not inline a function
// compiled under other options into this region.
inline int32_t bin_of_float(float x, double T) {
  const double b = std::floor(std::fabs(static_cast<double>(x)) / T * 2048.0);
  return static_cast<int32_t>(b < kBins - 1 ? b : kBins - 1);  // b >= 2047 -> 2047
}

// Bins [begin, end) with at most kChunk elements into h. Consecutive equal bins (the zeros
// of a ReLU output, half of such a tensor) make a single counter a chain of dependent
// increments through memory; four 16-bit copies taken in turn break the chain (about twice
// the throughput on ReLU outputs), and a copy never counts more than kChunk < 65536 values.
static_assert(kChunk < 65536, "a 16-bit copy counts up to kChunk values");
void bin_chunk(const float* p, int64_t begin, int64_t end, double T, uint64_t* h) {
  constexpr int64_t kBlock = 256;
  constexpr int kCopies = 4;
  constexpr double kLast = kBins - 1;
  const double scale = 2048.0 / T;
  int32_t bins[kBlock];
  alignas(64) uint16_t c[kCopies][kBins] = {};
  for (int64_t b0 = begin; b0 < end; b0 += kBlock) {
    const int64_t n = end - b0 < kBlock ? end - b0 : kBlock;
    int unsure = 0, bad = 0;
#pragma omp simd reduction(| : unsure, bad)
    for (int64_t j = 0; j < n; ++j) {
      const double v = std::fabs(static_cast<double>(p[b0 + j]));
      bad |= !(v <= kFloatMax);
      const double q = v * scale;
      const double f = std::floor(q);
      const double frac = q - f;
      bins[j] = static_cast<int32_t>(f < kLast ? f : kLast);
      const bool near_edge = frac < kNearInteger || frac > 1.0 - kNearInteger;
      unsure |= (v != 0.0) & (q < kLast + 0.5) & near_edge;
    }
    if (bad != 0) {  // NaN or Inf: not counted (the read pass and the binning are one)
      for (int64_t j = 0; j < n; ++j) {
        if (std::fabs(static_cast<double>(p[b0 + j])) <= kFloatMax) {
          ++c[0][bin_of_float(p[b0 + j], T)];
        }
      }
      continue;
    }
    if (unsure != 0) {
      for (int64_t j = 0; j < n; ++j) bins[j] = bin_of_float(p[b0 + j], T);
    }
    int64_t j = 0;
    for (; j + kCopies <= n; j += kCopies) {
      for (int k = 0; k < kCopies; ++k) ++c[k][bins[j + k]];
    }
    for (; j < n; ++j) ++c[0][bins[j]];
  }
  for (int b = 0; b < kBins; ++b) h[b] += uint64_t{c[0][b]} + c[1][b] + c[2][b] + c[3][b];
}

void histogram_float(const float* p, int64_t begin, int64_t end, double T, uint64_t* h) {
  for (int64_t b0 = begin; b0 < end; b0 += kChunk) {
    bin_chunk(p, b0, end - b0 < kChunk ? end : b0 + kChunk, T, h);
  }
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

int64_t chunks_of(int64_t n) { return (n + kChunk - 1) / kChunk; }

int threads_for(int64_t n, int threads) {
  return static_cast<int>(std::clamp<int64_t>(chunks_of(n), 1, std::max(threads, 1)));
}

// `range(begin, end)` is the Partial of one chunk.
template <typename Range>
MinMaxStats minmax_of(Range range, int64_t n, int threads) {
  const int64_t chunks = chunks_of(n);
  std::vector<Partial> parts(static_cast<size_t>(chunks));
  auto chunk = [&](int64_t c) {
    parts[static_cast<size_t>(c)] = range(c * kChunk, std::min(n, (c + 1) * kChunk));
  };
  run_tasks(threads_for(n, threads), chunks, chunk);
  MinMaxStats s;
  bool any = false;
  for (const Partial& p : parts) {  // chunk order
    if (p.nonfinite > 0 && s.first_nonfinite < 0) s.first_nonfinite = p.first_nonfinite;
    s.nonfinite += p.nonfinite;
    if (!p.any) continue;
    s.min = any ? std::min(s.min, p.min) : p.min;
    s.max = any ? std::max(s.max, p.max) : p.max;
    any = true;
  }
  s.min += 0.0;  // -0.0 and +0.0 compare equal; normalise so the bits never depend on order
  s.max += 0.0;
  s.abs_max = std::max(std::fabs(s.min), std::fabs(s.max));
  return s;
}

// `bin_range(begin, end, h)` adds one chunk's counts to h.
template <typename BinRange>
void histogram_of(BinRange bin_range, int64_t n, int threads, std::span<uint64_t> counts) {
  const int64_t chunks = chunks_of(n);
  const int nt = threads_for(n, threads);
  // One histogram per run of neighbouring chunks, as many runs as threads.
  std::vector<std::array<uint64_t, kBins>> local(static_cast<size_t>(nt));
  auto run = [&](int64_t r) {
    std::array<uint64_t, kBins>& h = local[static_cast<size_t>(r)];
    h.fill(0);
    for (int64_t c = chunks * r / nt; c < chunks * (r + 1) / nt; ++c) {
      bin_range(c * kChunk, std::min(n, (c + 1) * kChunk), h.data());
    }
  };
  run_tasks(nt, nt, run);
  for (const auto& h : local) {  // run order; integer sums are exact in any order anyway
    for (int b = 0; b < kBins; ++b) counts[static_cast<size_t>(b)] += h[static_cast<size_t>(b)];
  }
}

// Calls f(load) with an element loader (index -> double) for the tensor's dtype.
template <typename F>
void with_loader(const ir::Tensor& t, F&& f) {
  switch (t.dtype()) {
    case ir::DType::kFloat32: {
      const float* p = t.data<float>();
      f([p](int64_t i) { return static_cast<double>(p[i]); });
      return;
    }
    case ir::DType::kFloat64: {
      const double* p = t.data<double>();
      f([p](int64_t i) { return p[i]; });
      return;
    }
    case ir::DType::kFloat16: {
      const uint16_t* p = t.data<uint16_t>();
      f([p](int64_t i) { return static_cast<double>(ir::half_to_float(p[i])); });
      return;
    }
    case ir::DType::kBFloat16: {
      const uint16_t* p = t.data<uint16_t>();
      f([p](int64_t i) { return static_cast<double>(ir::bfloat16_to_float(p[i])); });
      return;
    }
    default:
      f([&t](int64_t i) { return t.as_double(i); });
      return;
  }
}

template <typename Load>
void bin_loop(Load load, int64_t begin, int64_t end, double T, uint64_t* h) {
  for (int64_t i = begin; i < end; ++i) {
    const double x = load(i);
    if (!std::isfinite(x)) continue;
    ++h[bin_of(std::fabs(x), T)];
  }
}

}  // namespace

MinMaxStats HostTensorStatistics::minmax() const {
  MinMaxStats s;
  if (tensor_.dtype() == ir::DType::kFloat32) {
    const float* p = tensor_.data<float>();
    auto load = [p](int64_t i) { return static_cast<double>(p[i]); };
    auto range = [&](int64_t b, int64_t e) {
      Partial part;
      return minmax_finite(p, b, e, part) ? part : minmax_range(load, b, e);
    };
    return minmax_of(range, tensor_.size(), threads_);
  }
  with_loader(tensor_, [&](auto load) {
    s = minmax_of([&](int64_t b, int64_t e) { return minmax_range(load, b, e); }, tensor_.size(),
                  threads_);
  });
  return s;
}

void HostTensorStatistics::histogram(double T, std::span<uint64_t> counts) const {
  if (tensor_.dtype() == ir::DType::kFloat32 && T > 0.0) {  // T <= 0: bin_of puts all in bin 0
    const float* p = tensor_.data<float>();
    auto bin_range = [&](int64_t b, int64_t e, uint64_t* h) { histogram_float(p, b, e, T, h); };
    histogram_of(bin_range, tensor_.size(), threads_, counts);
    return;
  }
  with_loader(tensor_, [&](auto load) {
    histogram_of([&](int64_t b, int64_t e, uint64_t* h) { bin_loop(load, b, e, T, h); },
                 tensor_.size(), threads_, counts);
  });
}

}  // namespace ptq::runtime::cpu
