// The fast entropy search (calibrators/entropy.cpp: screen candidates in O(levels), then the
// exact KL near the minimum) against the spec's loop written out literally here, on histograms
// that stress ties: discrete values (exact KL 0 for many candidates), single bins, sparse
// tails, rectified and heavy-tailed data. The chosen bin must be identical.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ptq/calibrators.h"

namespace ptq::calib {
namespace {

// specs/calibrators.md, entropy, as written (float64, smallest i of the minimum KL).
std::optional<int> spec_best_bins(const std::vector<uint64_t>& hist) {
  std::vector<double> H(hist.begin(), hist.end());
  H[0] = 0;
  double total = 0;
  for (double h : H) total += h;
  if (total == 0) return std::nullopt;
  int best = -1;
  double best_kl = std::numeric_limits<double>::infinity();
  for (int i = 128; i <= 2048; ++i) {
    std::vector<double> P(H.begin(), H.begin() + i);
    for (int j = i; j < 2048; ++j) P[static_cast<size_t>(i - 1)] += H[static_cast<size_t>(j)];
    std::vector<double> Q(static_cast<size_t>(i), 0.0);
    for (int k = 0; k < 128; ++k) {
      const int lo = k * i / 128, hi = (k + 1) * i / 128;
      double sum = 0;
      int nz = 0;
      for (int j = lo; j < hi; ++j) {
        sum += H[static_cast<size_t>(j)];
        nz += H[static_cast<size_t>(j)] != 0;
      }
      for (int j = lo; j < hi; ++j) {
        if (H[static_cast<size_t>(j)] != 0) Q[static_cast<size_t>(j)] = sum / nz;
      }
    }
    double sp = 0, sq = 0;
    for (double v : P) sp += v;
    for (double v : Q) sq += v;
    double kl = 0;
    for (size_t j = 0; j < P.size(); ++j) {
      if (P[j] <= 0) continue;
      const double p = P[j] / sp, q = Q[j] / sq;
      kl += q > 0 ? p * std::log(p / q) : std::numeric_limits<double>::infinity();
    }
    if (best < 0 || kl < best_kl) {
      best = i;
      best_kl = kl;
    }
  }
  return best;
}

std::vector<uint64_t> histogram_of(const std::vector<double>& values) {
  double T = 0;
  for (double v : values) T = std::max(T, std::fabs(v));
  std::vector<uint64_t> h(kHistogramBins, 0);
  for (double v : values) ++h[static_cast<size_t>(histogram_bin(std::fabs(v), T))];
  return h;
}

void expect_same_choice(const std::vector<uint64_t>& h, const std::string& what) {
  const auto fast = entropy_best_bins(HistogramView{1.0, h});
  const auto spec = spec_best_bins(h);
  EXPECT_EQ(fast, spec) << what;
}

TEST(EntropySearch, SameBinAsTheSpecLoopOnContinuousData) {
  std::mt19937_64 rng(1234);
  std::normal_distribution<double> normal(0, 1);
  std::student_t_distribution<double> heavy(2.5);
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<double> g, relu, t;
    const int n = 2000 + 3000 * trial;
    for (int i = 0; i < n; ++i) {
      const double x = normal(rng);
      g.push_back(x);
      relu.push_back(std::max(0.0, x));
      t.push_back(heavy(rng));
    }
    for (int k = 0; k < trial; ++k) g.push_back(40.0 + k);  // a few far outliers
    expect_same_choice(histogram_of(g), "gaussian " + std::to_string(trial));
    expect_same_choice(histogram_of(relu), "relu " + std::to_string(trial));
    expect_same_choice(histogram_of(t), "student-t " + std::to_string(trial));
  }
}

TEST(EntropySearch, SameBinOnDiscreteAndDegenerateHistograms) {
  std::mt19937_64 rng(99);
  // Pixel-like data: 256 levels (many candidates of exactly equal KL).
  for (int levels : {2, 3, 17, 64, 256}) {
    std::vector<double> v;
    for (int i = 0; i < 20000; ++i)
      v.push_back(static_cast<double>(rng() % static_cast<uint64_t>(levels)) / (levels - 1));
    expect_same_choice(histogram_of(v), "levels " + std::to_string(levels));
  }
  // One non-zero bin, at several places.
  for (size_t bin : {size_t{1}, size_t{5}, size_t{127}, size_t{128}, size_t{1000}, size_t{2047}}) {
    std::vector<uint64_t> h(kHistogramBins, 0);
    h[bin] = 1000;
    h[0] = 50;
    expect_same_choice(h, "single bin " + std::to_string(bin));
  }
  // Sparse random bins with huge counts (KL terms of large magnitude).
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<uint64_t> h(kHistogramBins, 0);
    const int nonzero = 1 + trial * 40;
    for (int k = 0; k < nonzero; ++k)
      h[rng() % kHistogramBins] += 1 + rng() % (uint64_t{1} << (10 + 4 * trial));
    expect_same_choice(h, "sparse " + std::to_string(trial));
  }
  // Everything in bin 0: no evidence, no choice.
  std::vector<uint64_t> zeros(kHistogramBins, 0);
  zeros[0] = 10;
  EXPECT_EQ(entropy_best_bins(HistogramView{1.0, zeros}), std::nullopt);
  EXPECT_EQ(spec_best_bins(zeros), std::nullopt);
}

}  // namespace
}  // namespace ptq::calib
