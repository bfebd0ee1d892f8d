// `ptq cache show|check|convert|merge` end to end through the built binary, on caches of the
// bundled example calibrated once per test suite.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calib_test_util.h"
#include "cli/run_ptq.h"
#include "common/files.h"
#include "ptq/calib_cache.h"

namespace ptq::calibration {
namespace {

namespace fs = std::filesystem;
using ptq::testing::PtqResult;
using ptq::testing::run_ptq;
using testing::example_data;
using testing::example_model;
using ptq::testing::read_file;
using testing::TempDir;

class CacheCli : public ::testing::Test {
 protected:
  // One entropy cache (with histograms) of the example, shared by the tests.
  static void SetUpTestSuite() {
    ::setenv("SOURCE_DATE_EPOCH", "1714564800", 1);
    ::setenv("OMP_WAIT_POLICY", "passive", 1);  // see cli_calibrate_test.cpp
    dir_ = new TempDir("CacheCli");
    const PtqResult r = run_ptq({"calibrate", example_model(), "--data", example_data(), "--quiet",
                                 "--samples", "96", "--batch", "32", "--threads", "1",
                                 "--method", "entropy", "-o", cache()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string cache() { return *dir_ / "entropy.json"; }
  static TempDir* dir_;
};
TempDir* CacheCli::dir_ = nullptr;

calib::CalibrationTable read(const std::string& path) {
  auto t = calib::read_cache(path);
  EXPECT_TRUE(t.has_value()) << t.status().message();
  return t.has_value() ? std::move(*t) : calib::CalibrationTable{};
}

TEST_F(CacheCli, ShowListsEveryTensorWithItsRange) {
  const calib::CalibrationTable t = read(cache());
  ASSERT_FALSE(t.tensors.empty());
  PtqResult r = run_ptq({"cache", "show", cache()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("json cache, method entropy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("96 samples, batch 32, backend cpu"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(t.model.graph_sha256), std::string::npos) << r.out;
  for (const auto& [name, range] : t.tensors) {
    EXPECT_NE(r.out.find(name + " "), std::string::npos) << name;
    EXPECT_NE(r.out.find(fmt::format("{:.6g}", range.amax)), std::string::npos) << name;
  }
  r = run_ptq({"cache", "show", cache(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["method"], "entropy");
  EXPECT_EQ(j["format"], "json");
  EXPECT_EQ(j["calibration"]["samples"], 96);
  ASSERT_EQ(j["tensors"].size(), t.tensors.size());
  for (const nlohmann::json& e : j["tensors"]) {
    const calib::TensorRange* range = t.find(e["name"].get<std::string>());
    ASSERT_NE(range, nullptr);
    EXPECT_EQ(e["amax"].get<double>(), range->amax);
    EXPECT_EQ(e["scale"].get<double>(), range->amax / 127.0);
    EXPECT_TRUE(e["histogram"].get<bool>());
  }
}

TEST_F(CacheCli, ConvertRoundTripsThroughEveryFormat) {
  TempDir dir;
  const calib::CalibrationTable t = read(cache());
  // By name: *.cache is TensorRT, calibration.cache / calibration.json are ONNX Runtime's.
  ASSERT_EQ(run_ptq({"cache", "convert", cache(), "-o", dir / "t.cache"}).exit_code, 0);
  ASSERT_EQ(run_ptq({"cache", "convert", cache(), "-o", dir / "calibration.cache"}).exit_code, 0);
  ASSERT_EQ(run_ptq({"cache", "convert", cache(), "-o", dir / "calibration.json"}).exit_code, 0);
  ASSERT_EQ(run_ptq({"cache", "convert", cache(), "-o", dir / "td.txt", "--format", "ort-json",
                     "--ort-json-style", "tensors-data"}).exit_code, 0);
  EXPECT_TRUE(read_file(dir / "t.cache").starts_with("TRT-8601-EntropyCalibration2\n"));
  EXPECT_EQ(calib::detect_format(read_file(dir / "calibration.cache")),
            calib::CacheFormat::kOrtText);
  EXPECT_EQ(calib::detect_format(read_file(dir / "calibration.json")),
            calib::CacheFormat::kOrtJson);
  EXPECT_NE(read_file(dir / "td.txt").find("TensorsData"), std::string::npos);
  for (const char* file : {"t.cache", "calibration.cache", "calibration.json", "td.txt"}) {
    // ... and back to a ptqkit JSON cache.
    const std::string back = dir / (std::string(file) + ".json");
    const PtqResult r = run_ptq({"cache", "convert", dir / file, "-o", back});
    ASSERT_EQ(r.exit_code, 0) << file << ": " << r.err;
    const calib::CalibrationTable u = read(back);
    ASSERT_EQ(u.tensors.size(), t.tensors.size()) << file;
    for (const auto& [name, range] : t.tensors) {
      ASSERT_NE(u.find(name), nullptr) << file << " " << name;
      // TensorRT keeps a float32 scale; the others the amax in shortest decimal or float32.
      EXPECT_NEAR(u.find(name)->amax, range.amax, 1e-6 * range.amax) << file << " " << name;
    }
  }
  // A file name that says nothing about the format needs --format.
  PtqResult r = run_ptq({"cache", "convert", cache(), "-o", dir / "x.txt"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // No histograms in a TensorRT cache: another method cannot be applied.
  r = run_ptq(
      {"cache", "convert", dir / "t.cache", "-o", dir / "p.json", "--method", "percentile"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("has no histogram"), std::string::npos) << r.err;
  r = run_ptq({"cache", "convert", cache(), "-o", dir / "p.json", "--percentile", "99"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST_F(CacheCli, CheckReportsMissingAndExtraTensors) {
  TempDir dir;
  PtqResult r = run_ptq({"cache", "check", cache(), example_model()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 missing, 0 extra"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok"), std::string::npos) << r.out;
  // Against every float activation the default cache misses some.
  r = run_ptq({"cache", "check", cache(), example_model(), "--all-tensors"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("tensor(s) missing from the cache"), std::string::npos) << r.out;
  // A TensorRT cache records no hash: only the names are checked.
  ASSERT_EQ(run_ptq({"cache", "convert", cache(), "-o", dir / "t.cache"}).exit_code, 0);
  r = run_ptq({"cache", "check", dir / "t.cache", example_model()});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("not recorded"), std::string::npos) << r.out;
  // A cache with an extra entry.
  std::string text = read_file(dir / "t.cache") + "no_such_tensor: 3c010204\n";
  std::ofstream(dir / "extra.cache") << text;
  r = run_ptq({"cache", "check", dir / "extra.cache", example_model()});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("no_such_tensor"), std::string::npos) << r.out;
}

TEST_F(CacheCli, MergeRecomputesWithAMethodAndRefusesMismatches) {
  TempDir dir;
  // Two copies of one cache merge to doubled counts with the same ranges.
  PtqResult r =
      run_ptq({"cache", "merge", cache(), cache(), "-o", dir / "m.json", "--method", "percentile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const calib::CalibrationTable t = read(cache()), m = read(dir / "m.json");
  EXPECT_EQ(m.method, "percentile");
  EXPECT_EQ(m.run.samples, 2 * t.run.samples);
  for (const auto& [name, range] : t.tensors) {
    EXPECT_EQ(m.find(name)->count, 2 * range.count);
    EXPECT_EQ(m.find(name)->hist_max, range.hist_max);
  }
  // Mixed methods need --method.
  ASSERT_EQ(
      run_ptq({"cache", "convert", cache(), "-o", dir / "mse.json", "--method", "mse"}).exit_code,
      0);
  r = run_ptq({"cache", "merge", cache(), dir / "mse.json", "-o", dir / "x.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // Different models are refused unless forced.
  auto other = read(cache());
  other.model.graph_sha256 = std::string(64, 'a');
  ASSERT_TRUE(calib::write_json_cache(other, dir / "other.json").is_ok());
  r = run_ptq({"cache", "merge", cache(), dir / "other.json", "-o", dir / "x.json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = run_ptq({"cache", "merge", cache(), dir / "other.json", "-o", dir / "x.json", "--force"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Shards binned over different ranges merge only as a min-max table.
  const std::string small = dir / "small.json";
  r = run_ptq({"calibrate", example_model(), "--data", example_data(), "--quiet", "--samples", "8",
               "--threads", "1", "--method", "entropy", "-o", small});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_ptq({"cache", "merge", cache(), small, "-o", dir / "x.json"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  r = run_ptq({"cache", "merge", cache(), small, "-o", dir / "x.json", "--drop-histograms"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read(dir / "x.json").method, "minmax");
  EXPECT_FALSE(fs::exists(dir / "nothing.json"));
}

}  // namespace
}  // namespace ptq::calibration
