// The C++ calibrators against the independent NumPy reference (tests/reference/calibrators.py,
// written from the spec): same histogram counts, same chosen bin, amax within 1e-12 relative,
// on every distribution of the spec with fixed seeds.
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ptq/calibrators.h"
#include "samples.h"

namespace ptq::calib {
namespace {

using testing::Dist;

struct Computed {
  double T = 0.0, min = 0.0, max = 0.0;
  int64_t count = 0;
  std::vector<uint64_t> histogram;
  std::map<std::string, double> amax;
  std::map<std::string, std::optional<int>> bin;
};

Computed compute(const std::vector<float>& x, double percentile) {
  Collector c;
  EXPECT_TRUE(c.add_range("t", x, {0, 1}).is_ok());
  EXPECT_TRUE(c.finish_ranges().is_ok());
  EXPECT_TRUE(c.add_histogram("t", x).is_ok());
  const TensorCollector& t = c.tensors().at("t");
  Computed out;
  out.T = t.range();
  out.count = t.count();
  out.min = t.range_result().min;
  out.max = t.range_result().max;
  out.histogram.assign(t.counts().begin(), t.counts().end());
  const HistogramView view{t.range(), t.counts()};
  for (const CalibratorInfo& info : calibrators()) {
    MethodConfig config{std::string(info.name), percentile};
    auto table = c.table(config);
    EXPECT_TRUE(table.has_value()) << table.status().message();
    out.amax[config.name] = table->tensors.at("t").amax;
  }
  out.bin["entropy"] = entropy_best_bins(view);
  out.bin["mse"] = mse_best_bins(view);
  out.bin["percentile"] = percentile_bin(view, percentile);
  return out;
}

std::optional<int> bin_of(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<int>();
}

void check_against_reference(const std::vector<Dist>& dists, double percentile) {
  const auto dir = testing::temp_dir("reference");
  std::string command =
      fmt::format("/usr/bin/python3 {}/tests/reference/calibrators.py --percentile {}",
                  PTQ_SOURCE_DIR, percentile);
  std::vector<std::vector<float>> data;
  for (size_t i = 0; i < dists.size(); ++i) {
    data.push_back(testing::make_samples(dists[i], 120000, 1000 + i));
    const auto npy = dir / fmt::format("{}.npy", testing::dist_name(dists[i]));
    testing::write_npy(npy, data.back());
    command += fmt::format(" {} {}", npy.string(),
                           (dir / fmt::format("{}.json", testing::dist_name(dists[i]))).string());
  }
  ASSERT_EQ(std::system(command.c_str()), 0) << "reference failed: " << command;

  for (size_t i = 0; i < dists.size(); ++i) {
    SCOPED_TRACE(testing::dist_name(dists[i]));
    std::ifstream in(dir / fmt::format("{}.json", testing::dist_name(dists[i])));
    const nlohmann::json ref = nlohmann::json::parse(in);
    const Computed got = compute(data[i], percentile);
    std::printf("%-18s T=%-10.6g entropy i=%-5s percentile k=%-5s mse i=%s\n",
                testing::dist_name(dists[i]), got.T, ref["bin"]["entropy"].dump().c_str(),
                ref["bin"]["percentile"].dump().c_str(), ref["bin"]["mse"].dump().c_str());
    EXPECT_EQ(got.T, ref["T"].get<double>());
    EXPECT_EQ(got.count, ref["count"].get<int64_t>());
    EXPECT_EQ(got.min, ref["min"].get<double>());
    EXPECT_EQ(got.max, ref["max"].get<double>());
    EXPECT_EQ(got.histogram, ref["histogram"].get<std::vector<uint64_t>>());
    for (const char* m : {"entropy", "mse", "percentile"}) {
      EXPECT_EQ(got.bin.at(m), bin_of(ref["bin"][m])) << m;
    }
    for (const CalibratorInfo& info : calibrators()) {
      const std::string m(info.name);
      const double want = ref["amax"][m].get<double>();
      EXPECT_NEAR(got.amax.at(m), want, 1e-12 * std::fabs(want)) << m;
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Reference, EveryDistributionMatchesNumPy) {
  check_against_reference(
      {Dist::kGaussian, Dist::kLaplace, Dist::kUniform, Dist::kRelu, Dist::kHeavyTail,
       Dist::kGaussianOutliers, Dist::kZeros, Dist::kConstant},
      99.99);
}

TEST(Reference, OtherPercentileMatchesNumPy) {
  check_against_reference({Dist::kLaplace, Dist::kHeavyTail}, 99.9);
}

}  // namespace
}  // namespace ptq::calib
