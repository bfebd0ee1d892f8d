// Known answers of the calibration methods (specs/calibrators.md) on hand-built histograms and
// on distributions whose right answer is known qualitatively.
#include <gtest/gtest.h>

#include "ptq/calibrators.h"
#include "samples.h"

namespace ptq::calib {
namespace {

using testing::Dist;

// The collected histogram of `x` (range T = max |x|).
TensorCollector collect(const std::vector<float>& x) {
  TensorCollector t("t", {});
  EXPECT_TRUE(t.add_range(x, {0, 1}).is_ok());
  EXPECT_TRUE(t.finish_ranges().is_ok());
  EXPECT_TRUE(t.add_histogram(x).is_ok());
  return t;
}

double amax_of(const TensorCollector& t, const std::string& method, double p = 99.99) {
  auto a = compute_amax(HistogramView{t.range(), t.counts()}, MethodConfig{method, p});
  EXPECT_TRUE(a.has_value()) << a.status().message();
  return *a;
}

TEST(Methods, RegistryListsEveryMethodOnce) {
  EXPECT_EQ(calibrator_names(), "entropy, minmax, mse, percentile");
  for (const CalibratorInfo& c : calibrators()) EXPECT_EQ(find_calibrator(c.name), &c);
  EXPECT_EQ(find_calibrator("kl"), nullptr);
  EXPECT_FALSE(MethodConfig{"kl"}.validate().is_ok());
  EXPECT_EQ(MethodConfig{"kl"}.validate().code(), StatusCode::kUsage);
  EXPECT_FALSE((MethodConfig{"percentile", 0.0}.validate().is_ok()));
  EXPECT_FALSE((MethodConfig{"percentile", 100.5}.validate().is_ok()));
  EXPECT_TRUE((MethodConfig{"percentile", 100.0}.validate().is_ok()));
}

// What ONNX Runtime's (CalibrationMethod members) and ModelOpt's (max) users type.
TEST(Methods, OtherToolsNamesStandForRegisteredMethods) {
  for (const CalibratorInfo& c : calibrators()) {
    EXPECT_EQ(canonical_calibrator_name(c.name), c.name);
  }
  EXPECT_EQ(canonical_calibrator_name("max"), "minmax");
  EXPECT_EQ(canonical_calibrator_name("MinMax"), "minmax");
  EXPECT_EQ(canonical_calibrator_name("Entropy"), "entropy");
  EXPECT_EQ(canonical_calibrator_name("Percentile"), "percentile");
  EXPECT_EQ(canonical_calibrator_name("Distribution"), "");  // ORT's, with no counterpart here
  EXPECT_EQ(canonical_calibrator_name("kl"), "");
}

// The registry (ptq/calibrators.inc) carries each method's names in other tools, whether it
// gives weight ranges, and its parameters; MethodConfig reads the parameters from it.
TEST(Methods, RegistryCarriesNamesWeightsAndParameters) {
  struct Want {
    const char* name;
    const char* trt;
    const char* ort;
    bool weights;
  };
  for (const Want& w : {Want{"entropy", "EntropyCalibration2", "Entropy", false},
                        Want{"minmax", "MinMaxCalibration", "MinMax", true},
                        Want{"mse", "", "", true}, Want{"percentile", "", "Percentile", true}}) {
    const CalibratorInfo* c = find_calibrator(w.name);
    ASSERT_NE(c, nullptr) << w.name;
    EXPECT_EQ(c->trt_name, w.trt) << w.name;
    EXPECT_EQ(c->ort_name, w.ort) << w.name;
    EXPECT_EQ(c->weights, w.weights) << w.name;
  }
  EXPECT_EQ(calibrator_choices(), "entropy, minmax, mse or percentile");
  EXPECT_EQ(calibrator_choices(true), "minmax, mse or percentile");

  ASSERT_EQ(calibrator_params().size(), 1u);
  const CalibratorParam& p = calibrator_params()[0];
  EXPECT_EQ(p.method, "percentile");
  EXPECT_EQ(p.name, "percentile");
  EXPECT_EQ(p.field, &MethodConfig::percentile);
  EXPECT_EQ((MethodConfig{"percentile", 99.9}.params()),
            (std::map<std::string, double>{{"percentile", 99.9}}));
  EXPECT_TRUE(MethodConfig{"entropy"}.params().empty());
  EXPECT_EQ((MethodConfig{"percentile", 0.0}.validate().message()),
            "percentile 0 is out of range (0, 100]");
  EXPECT_TRUE((MethodConfig{"entropy", 0.0}.validate().is_ok()));  // not entropy's parameter
  CalibrationTable t;
  t.method = "percentile";
  t.method_params = {{"percentile", 99.5}};
  auto back = MethodConfig::from_table(t);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->name, "percentile");
  EXPECT_EQ(back->percentile, 99.5);
}

TEST(Methods, BinRuleIsFloat64InSpecOrder) {
  EXPECT_EQ(histogram_bin(0.0, 1.0), 0);
  EXPECT_EQ(histogram_bin(1.0, 1.0), 2047);           // v = T lands in the last bin
  EXPECT_EQ(histogram_bin(0.5, 1.0), 1024);
  EXPECT_EQ(histogram_bin(1.0 / 2048.0, 1.0), 1);     // bin edges belong to the upper bin
  EXPECT_EQ(histogram_bin(5.0, 1.0), 2047);           // beyond T clamps
  EXPECT_EQ(histogram_bin(0.0, 0.0), 0);              // T = 0: all zeros, bin 0
  // v / T * 2048 rounds differently from v * (2048 / T) for some values near bin edges; the
  // spec fixes the order. Find such cases and check the bin follows the spec's order.
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> range(0.1, 10.0);
  int differing = 0;
  for (int n = 0; n < 100000 && differing < 10; ++n) {
    const double T = range(rng);
    const double edge = static_cast<double>(rng() % 2047 + 1) * T / 2048.0;
    for (double v : {edge, std::nextafter(edge, 0.0), std::nextafter(edge, 100.0)}) {
      const double spec = std::floor(v / T * 2048.0);
      if (spec != std::floor(v * (2048.0 / T))) {
        ++differing;
        EXPECT_EQ(histogram_bin(v, T), static_cast<int>(spec));
      }
    }
  }
  EXPECT_GT(differing, 0);
}

TEST(Methods, AllZeroTensorGivesZeroForEveryMethod) {
  const TensorCollector t = collect(std::vector<float>(1000, 0.0f));
  EXPECT_EQ(t.range(), 0.0);
  EXPECT_EQ(t.counts()[0], 1000u);
  for (const CalibratorInfo& c : calibrators())
    EXPECT_EQ(amax_of(t, std::string(c.name)), 0.0) << c.name;
}

TEST(Methods, ConstantTensorKeepsTheFullRange) {
  const TensorCollector t = collect(std::vector<float>(500, -2.375f));
  EXPECT_EQ(t.range(), 2.375);
  EXPECT_EQ(t.counts()[2047], 500u);
  EXPECT_EQ(entropy_best_bins({t.range(), t.counts()}), 2048);
  EXPECT_EQ(amax_of(t, "entropy"), 2.375);  // min((2048 + 0.5) w, T) = T
  EXPECT_EQ(amax_of(t, "minmax"), 2.375);
  EXPECT_EQ(amax_of(t, "percentile"), 2.375);  // (2047 + 1) w
}

TEST(Methods, PercentileOnAHandBuiltHistogram) {
  HistogramCounts h{};
  for (int j = 0; j < 10; ++j) h[static_cast<size_t>(j * 100)] = 10;  // 100 values in 10 bins
  const HistogramView view{2048.0, h};  // w = 1
  EXPECT_EQ(percentile_bin(view, 95.0), 900);   // cdf reaches 0.9 at bin 800, 1.0 at 900
  EXPECT_EQ(percentile_bin(view, 90.0), 800);   // cdf[800] = 0.9 >= 0.9
  EXPECT_EQ(percentile_bin(view, 10.0), 0);
  EXPECT_EQ(*compute_amax(view, {"percentile", 95.0}), 901.0);  // (k + 1) w
}

TEST(Methods, PercentileOfUniformIsItsQuantile) {
  std::vector<float> x = testing::make_samples(Dist::kUniform, 400000, 7);
  const TensorCollector t = collect(x);
  const double w = t.range() / kHistogramBins;
  EXPECT_NEAR(amax_of(t, "percentile", 99.0), 0.99 * t.range(), 2 * w);
  EXPECT_NEAR(amax_of(t, "percentile", 50.0), 0.50 * t.range(), 2 * w);
}

TEST(Methods, EntropyKeepsTheRangeOfATensorWithoutOutliers) {
  const TensorCollector t = collect(testing::make_samples(Dist::kUniform, 200000, 3));
  const std::optional<int> best = entropy_best_bins({t.range(), t.counts()});
  ASSERT_TRUE(best.has_value());
  EXPECT_GE(*best, 1990);  // i near 2048
  EXPECT_GE(amax_of(t, "entropy"), 0.97 * t.range());
}

TEST(Methods, EntropyClipsAGaussianWithFewExtremeOutliersWellBelowT) {
  const std::vector<float> x = testing::make_samples(Dist::kGaussianOutliers, 200000, 11);
  const TensorCollector t = collect(x);
  EXPECT_GT(t.range(), 20.0);
  const double amax = amax_of(t, "entropy");
  EXPECT_LT(amax, 0.5 * t.range());
  EXPECT_GT(amax, 4.0);  // but it keeps the Gaussian body
  // The percentile ignores the outliers too (MSE weighs each outlier's clipping error, so it
  // may keep them: no claim about it here).
  EXPECT_LT(amax_of(t, "percentile"), 0.2 * t.range());
}

TEST(Methods, EntropyOfReluOutputEqualsItsPositivePart) {
  const std::vector<float> x = testing::make_samples(Dist::kGaussian, 200000, 5);
  std::vector<float> relu, positive;
  for (float v : x) {
    relu.push_back(std::max(v, 0.0f));
    if (v > 0.0f) positive.push_back(v);
  }
  const TensorCollector r = collect(relu);
  const TensorCollector p = collect(positive);
  ASSERT_EQ(r.range(), p.range());
  EXPECT_GT(r.counts()[0], 80000u);  // the exact zeros: about half the values
  EXPECT_EQ(entropy_best_bins({r.range(), r.counts()}), entropy_best_bins({p.range(), p.counts()}));
  EXPECT_EQ(amax_of(r, "entropy"), amax_of(p, "entropy"));
  // Without dropping bin 0 the zeros would dominate: the search copy is what differs.
  EXPECT_NE(r.counts()[0], p.counts()[0]);
}

TEST(Methods, MseStaysWithinTheCandidateRange) {
  for (Dist d : {Dist::kGaussian, Dist::kLaplace, Dist::kHeavyTail}) {
    const TensorCollector t = collect(testing::make_samples(d, 100000, 21));
    const double w = t.range() / kHistogramBins;
    const double a = amax_of(t, "mse");
    EXPECT_GE(a, 128 * w) << testing::dist_name(d);
    EXPECT_LE(a, t.range()) << testing::dist_name(d);
  }
}

TEST(Methods, ComputeAmaxValidatesItsInput) {
  HistogramCounts h{};
  h[3] = 1;
  std::vector<uint64_t> short_counts(100, 1);
  EXPECT_FALSE(compute_amax({1.0, short_counts}, {"minmax"}).has_value());
  EXPECT_FALSE(compute_amax({-1.0, h}, {"minmax"}).has_value());
  EXPECT_FALSE(compute_amax({1.0, h}, {"nope"}).has_value());
  EXPECT_EQ(*compute_amax({1.0, h}, {"minmax"}), 1.0);
}

}  // namespace
}  // namespace ptq::calib
