// entropy: TensorRT's EntropyCalibration2 exactly as specs/calibrators.md writes it. For each
// candidate i (keep the first i bins, fold the rest into the last kept bin), merge the kept bins
// into 128 levels and measure KL(P || Q); the smallest i of least KL wins.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ptq/calibrators.h"

namespace ptq::calib {

namespace {

constexpr int kLevels = 128;
constexpr double kInf = std::numeric_limits<double>::infinity();

// KL(P || Q) of candidate i. H is the search copy (H[0] = 0), `tail` = sum(H[i:]), `total` =
// sum(H): all integers held exactly. `q` is scratch of size >= i.
double candidate_kl(std::span<const uint64_t> H, int i, uint64_t tail, uint64_t total,
                    std::vector<double>& q) {
  const size_t last = static_cast<size_t>(i - 1);
  // Only the last kept bin can have P > 0 where Q = 0: it is empty but receives the outliers.
  if (tail > 0 && H[last] == 0) return kInf;
  const uint64_t kept = total - tail;  // sum(Q) before normalising: each level keeps its sum
  if (kept == 0) return kInf;
  for (int k = 0; k < kLevels; ++k) {
    const size_t lo = static_cast<size_t>(k) * static_cast<size_t>(i) / kLevels;
    const size_t hi = static_cast<size_t>(k + 1) * static_cast<size_t>(i) / kLevels;
    uint64_t sum = 0;
    int nz = 0;
    for (size_t j = lo; j < hi; ++j) {
      sum += H[j];
      nz += H[j] != 0 ? 1 : 0;
    }
    const double level = nz > 0 ? static_cast<double>(sum) / nz : 0.0;
    for (size_t j = lo; j < hi; ++j) q[j] = H[j] != 0 ? level : 0.0;
  }
  const double sum_p = static_cast<double>(total);
  const double sum_q = static_cast<double>(kept);
  double kl = 0.0;
  for (size_t j = 0; j <= last; ++j) {
    const uint64_t pj = j == last ? H[j] + tail : H[j];
    if (pj == 0) continue;
    const double p = static_cast<double>(pj) / sum_p;
    const double qn = q[j] / sum_q;
    kl += p * std::log(p / qn);
  }
  return kl;
}

// KL(P || Q) of candidate i in O(levels) from prefix sums. With S = total, K = kept, p'_j the
// unnormalised P (H[j], the last kept bin H[last] + tail) and L_k = sum_k / nz_k the level
// value of Q, every p'_j > 0 has q_j = L_k / K > 0, and sum(p') = S, so
//   KL = (1/S) [ sum p'_j ln p'_j - sum_k s'_k ln L_k ] - ln S + ln K,
// s'_k = sum of p' over level k. It is the same quantity summed in another order, so it can
// differ from candidate_kl in the last bits: it only screens candidates (see entropy_best_bins).
struct Prefix {
  std::vector<uint64_t> sum;  // sum[j] = H[0] + ... + H[j-1]
  std::vector<int32_t> nz;    // nz[j] = count of non-zero H[0..j-1]
  std::vector<double> hlogh;  // hlogh[j] = sum of H ln H over H[0..j-1]
};

Prefix prefix_of(std::span<const uint64_t> H) {
  Prefix p;
  const size_t n = H.size();
  p.sum.assign(n + 1, 0);
  p.nz.assign(n + 1, 0);
  p.hlogh.assign(n + 1, 0.0);
  for (size_t j = 0; j < n; ++j) {
    const double h = static_cast<double>(H[j]);
    p.sum[j + 1] = p.sum[j] + H[j];
    p.nz[j + 1] = p.nz[j] + (H[j] != 0 ? 1 : 0);
    p.hlogh[j + 1] = p.hlogh[j] + (H[j] != 0 ? h * std::log(h) : 0.0);
  }
  return p;
}

double screening_kl(std::span<const uint64_t> H, const Prefix& pre, int i, uint64_t tail,
                    uint64_t total) {
  const size_t last = static_cast<size_t>(i - 1);
  if (tail > 0 && H[last] == 0) return kInf;
  const uint64_t kept = total - tail;
  if (kept == 0) return kInf;
  const double plast = static_cast<double>(H[last] + tail);
  double acc = pre.hlogh[last] + (plast > 0.0 ? plast * std::log(plast) : 0.0);
  for (int k = 0; k < kLevels; ++k) {
    const size_t lo = static_cast<size_t>(k) * static_cast<size_t>(i) / kLevels;
    const size_t hi = static_cast<size_t>(k + 1) * static_cast<size_t>(i) / kLevels;
    const int nz = pre.nz[hi] - pre.nz[lo];
    if (nz == 0) continue;
    const uint64_t sum = pre.sum[hi] - pre.sum[lo];
    const double s = static_cast<double>(sum + (k == kLevels - 1 ? tail : 0));
    acc -= s * std::log(static_cast<double>(sum) / nz);
  }
  const double S = static_cast<double>(total);
  return acc / S - std::log(S) + std::log(static_cast<double>(kept));
}

// How far a screening KL may be from candidate_kl's: both are sums of ~2 * 2048 terms of
// magnitude <= ln(2^64) ~ 45 rounded in float64, far below this bound.
constexpr double kScreenSlack = 1e-9;

}  // namespace

// Screen every candidate with the O(levels) form, then evaluate exactly as the spec writes it
// (candidate_kl) every candidate that could be the minimum: those within twice the screening
// error of the screened minimum. The choice is therefore candidate_kl's over all candidates,
// smallest i on ties, at a fraction of the cost.
std::optional<int> entropy_best_bins(const HistogramView& hist) {
  if (!(hist.range > 0.0)) return std::nullopt;
  // The search copy: bin 0 ([0, w) quantizes to 0 under every candidate) says nothing.
  std::vector<uint64_t> H(hist.counts.begin(), hist.counts.end());
  H[0] = 0;
  std::vector<uint64_t> suffix(kHistogramBins + 1, 0);  // suffix[i] = sum(H[i:])
  for (int j = kHistogramBins - 1; j >= 0; --j) {
    suffix[static_cast<size_t>(j)] = suffix[static_cast<size_t>(j) + 1] + H[static_cast<size_t>(j)];
  }
  const uint64_t total = suffix[0];
  if (total == 0) return std::nullopt;
  const Prefix pre = prefix_of(H);
  std::vector<double> screened(kHistogramBins + 1, kInf);
  double screen_min = kInf;
  for (int i = kLevels; i <= kHistogramBins; ++i) {
    const double kl = screening_kl(H, pre, i, suffix[static_cast<size_t>(i)], total);
    screened[static_cast<size_t>(i)] = kl;
    screen_min = std::min(screen_min, kl);
  }
  std::vector<double> q(kHistogramBins);
  if (screen_min == kInf) return kLevels;  // every candidate infinite: the first one wins
  const double cutoff = screen_min + 2.0 * kScreenSlack * std::max(1.0, std::fabs(screen_min));
  int best = -1;
  double best_kl = kInf;
  for (int i = kLevels; i <= kHistogramBins; ++i) {
    if (!(screened[static_cast<size_t>(i)] <= cutoff)) continue;
    const double kl = candidate_kl(H, i, suffix[static_cast<size_t>(i)], total, q);
    if (best < 0 || kl < best_kl) {
      best = i;
      best_kl = kl;
    }
  }
  return best;
}

double entropy_amax(const HistogramView& hist, const MethodConfig& /*config*/) {
  if (!(hist.range > 0.0)) return 0.0;
  const std::optional<int> best = entropy_best_bins(hist);
  if (!best) return hist.range;  // nothing outside bin 0: no evidence to clip on
  return std::min((static_cast<double>(*best) + 0.5) * hist.bin_width(), hist.range);
}

}  // namespace ptq::calib
