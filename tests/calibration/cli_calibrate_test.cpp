// `ptq calibrate` end to end through the built binary on the bundled example (fashion_cnn.onnx
// with examples/data/calib.npy, 256 samples): byte-identical caches for any batch size, order
// and thread count; the sharded two-phase flow; TensorRT caches; non-finite data; bad inputs.
// (A run killed midway: killed_run_test.cpp.) SOURCE_DATE_EPOCH fixes the recorded date.
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
using testing::tensors_section;
using testing::TempDir;
using testing::without_batch;

class CalibrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("SOURCE_DATE_EPOCH", "1714564800", 1);
    // ctest runs tests in parallel on small machines: OpenMP threads that spin while waiting
    // (libgomp's default) then slow 2-thread runs down tenfold. Results do not depend on it.
    ::setenv("OMP_WAIT_POLICY", "passive", 1);
  }
};

// `ptq calibrate` on the example; one thread unless `extra` says otherwise (the CI machine is
// small and shared: OpenMP threads that wait on each other there only slow the tests down).
PtqResult calibrate(std::vector<std::string> extra) {
  std::vector<std::string> args{"calibrate", example_model(), "--data", example_data(), "--quiet"};
  if (std::find(extra.begin(), extra.end(), "--threads") == extra.end()) {
    args.insert(args.end(), {"--threads", "1"});
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return run_ptq(args);
}

ir::Tensor example_samples() {
  auto t = data::load_npy(example_data());
  EXPECT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->dtype(), ir::DType::kFloat16);
  return std::move(*t);
}

TEST_F(CalibrateCli, SameBytesForAnyBatchSizeOrderThreadAndWorkerCount) {
  TempDir dir;
  struct Case {
    std::string batch;
    std::vector<std::string> more;
  };
  const std::vector<Case> cases{{"1", {"--threads", "1"}},
                                {"7", {"--threads", "1"}},
                                {"64", {"--threads", "2"}},
                                {"7", {"--threads", "2", "--shuffle", "--seed", "3"}},
                                {"64", {"--threads", "1", "--shuffle"}},
                                {"7", {"--threads", "2", "--workers", "2"}},
                                {"5", {"--threads", "3", "--workers", "3", "--shuffle"}}};
  std::string json0, trt0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string out = dir / ("c" + std::to_string(k) + ".json");
    const std::string trt = dir / ("c" + std::to_string(k) + ".cache");
    std::vector<std::string> args{"--batch", cases[k].batch, "-o", out, "--trt-cache", trt};
    args.insert(args.end(), cases[k].more.begin(), cases[k].more.end());
    const PtqResult r = calibrate(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string json = read_file(out), cache = read_file(trt);
    ASSERT_NE(json.find("\"method\":\"mse\""), std::string::npos);  // the default
    ASSERT_NE(json.find("\"samples\":256"), std::string::npos);
    if (k == 0) {
      json0 = json;
      trt0 = cache;
      continue;
    }
    EXPECT_EQ(tensors_section(json), tensors_section(json0)) << "case " << k;
    EXPECT_EQ(without_batch(json), without_batch(json0)) << "case " << k;
    EXPECT_EQ(cache, trt0) << "case " << k;
  }
  EXPECT_NE(json0.find("\"batch\":1,"), std::string::npos);
  EXPECT_NE(json0.find("\"date\":\"2024-05-01T12:00:00Z\""), std::string::npos);
  // The Vulkan executor has the device to itself: several workers there are refused.
  const PtqResult r = calibrate({"--backend", "vulkan", "--workers", "2", "-o", dir / "v.json"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--workers applies to --backend cpu"), std::string::npos) << r.err;
}

TEST_F(CalibrateCli, ConvertWithAnotherMethodEqualsCalibratingWithIt) {
  TempDir dir;
  const std::string entropy = dir / "entropy.json";
  ASSERT_EQ(calibrate({"--batch", "32", "--method", "entropy", "-o", entropy}).exit_code, 0);
  struct Case {
    std::vector<std::string> method;
    std::string name;
  };
  for (const Case& c : {Case{{"--method", "percentile", "--percentile", "99.9"}, "p999"},
                        Case{{"--method", "percentile"}, "p9999"},
                        Case{{"--method", "mse"}, "mse"}}) {
    const std::string direct = dir / (c.name + "_direct.json");
    const std::string converted = dir / (c.name + "_converted.json");
    std::vector<std::string> args{"--batch", "32", "-o", direct};
    args.insert(args.end(), c.method.begin(), c.method.end());
    PtqResult r = calibrate(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> conv{"cache", "convert", entropy, "-o", converted};
    conv.insert(conv.end(), c.method.begin(), c.method.end());
    r = run_ptq(conv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_file(converted), read_file(direct)) << c.name;
  }
  // The methods do choose different ranges here (the comparison above is not vacuous).
  EXPECT_NE(tensors_section(read_file(dir / "mse_direct.json")),
            tensors_section(read_file(entropy)));
}

TEST_F(CalibrateCli, ShardsMergedEqualAllDataAtOnce) {
  TempDir dir;
  const ir::Tensor all = example_samples();
  const std::vector<std::pair<int64_t, int64_t>> parts{{0, 100}, {100, 80}, {180, 76}};
  std::vector<std::string> shards;
  for (size_t k = 0; k < parts.size(); ++k) {
    shards.push_back(dir / ("shard" + std::to_string(k) + ".npy"));
    ASSERT_TRUE(
        data::save_npy(shards.back(), testing::rows(all, parts[k].first, parts[k].second)).is_ok());
  }
  const auto run_on = [&](const std::string& src, std::vector<std::string> extra) {
    std::vector<std::string> args{"calibrate", example_model(), "--data", src, "--quiet", "--batch",
                                  "16",        "--threads",     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ptq(args);
  };
  const std::string whole = dir / "whole.json";
  PtqResult r = run_on(example_data(), {"-o", whole});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Phase 1: ranges per shard; merged.
  std::vector<std::string> merge_ranges{"cache", "merge"};
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string out = dir / ("ranges" + std::to_string(k) + ".json");
    r = run_on(shards[k], {"--ranges-only", "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    merge_ranges.push_back(out);
  }
  const std::string ranges = dir / "ranges.json";
  merge_ranges.insert(merge_ranges.end(), {"-o", ranges});
  r = run_ptq(merge_ranges);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Phase 2: histograms over the common ranges; merged.
  std::vector<std::string> merge{"cache", "merge"};
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string out = dir / ("part" + std::to_string(k) + ".json");
    r = run_on(shards[k], {"--ranges", ranges, "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    merge.push_back(out);
  }
  const std::string merged = dir / "merged.json";
  merge.insert(merge.end(), {"-o", merged});
  r = run_ptq(merge);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string a = read_file(whole), b = read_file(merged);
  EXPECT_EQ(tensors_section(b), tensors_section(a));
  EXPECT_NE(b.find("\"merged_shards\":\"3\""), std::string::npos);
  EXPECT_NE(b.find("\"samples\":256"), std::string::npos);
  // Merging the phase-2 shards' own-range caches (without --ranges) is refused: not exact.
  std::vector<std::string> own{"cache", "merge"};
  for (size_t k = 0; k < shards.size(); ++k) {
    const std::string out = dir / ("own" + std::to_string(k) + ".json");
    ASSERT_EQ(run_on(shards[k], {"-o", out}).exit_code, 0);
    own.push_back(out);
  }
  own.insert(own.end(), {"-o", dir / "own.json"});
  r = run_ptq(own);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("histogram range"), std::string::npos) << r.err;
}

TEST_F(CalibrateCli, TensorRtCacheWrittenAndReadBack) {
  TempDir dir;
  const std::string json = dir / "c.json", trt = dir / "c.cache";
  PtqResult r = calibrate({"-o", json, "--trt-cache", trt, "--trt-version", "10.3.0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read_file(trt);
  EXPECT_TRUE(text.starts_with("TRT-100300-EntropyCalibration2\n")) << text.substr(0, 40);
  auto a = calib::read_cache(json);
  auto b = calib::read_cache(trt);
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(a->tensors.size(), b->tensors.size());
  for (const auto& [name, r1] : a->tensors) {
    const calib::TensorRange* r2 = b->find(name);
    ASSERT_NE(r2, nullptr) << name;
    // The TensorRT cache holds the float32 scale.
    EXPECT_EQ(static_cast<float>(r2->amax / 127.0), static_cast<float>(r1.amax / 127.0)) << name;
  }
  EXPECT_EQ(b->provenance["trt_version"], "10.3.0");
  // Methods TensorRT lacks are written under EntropyCalibration2 unless --trt-algo says.
  r = calibrate({"--method", "percentile", "-o", dir / "p.json", "--trt-cache", dir / "p.cache"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(read_file(dir / "p.cache").starts_with("TRT-8601-EntropyCalibration2\n"));
  r = calibrate({"--method", "percentile", "-o", dir / "p.json", "--trt-cache", dir / "p.cache",
                 "--trt-algo", "MinMaxCalibration"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(read_file(dir / "p.cache").starts_with("TRT-8601-MinMaxCalibration\n"));
}

TEST_F(CalibrateCli, CacheOfAnotherModelIsRefused) {
  TempDir dir;
  const std::string other = dir / "other.onnx";
  testing::save_and_load(testing::residual_model(), other);
  const std::string cache = dir / "fashion.json", ranges = dir / "fashion_ranges.json";
  ASSERT_EQ(calibrate({"-o", cache}).exit_code, 0);
  ASSERT_EQ(calibrate({"--ranges-only", "-o", ranges}).exit_code, 0);
  PtqResult r = run_ptq({"cache", "check", cache, example_model()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("graph hash: matches"), std::string::npos) << r.out;
  r = run_ptq({"cache", "check", cache, other});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("graph hash: differs"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("does not fit model"), std::string::npos) << r.err;
  // Phase 2 of a sharded run with another model's ranges.
  const std::string npy = dir / "x.npy";
  ASSERT_TRUE(data::save_npy(npy, testing::residual_samples(8, 1)).is_ok());
  r = run_ptq({"calibrate", other, "--data", npy, "--ranges", ranges, "-o", dir / "o.json",
               "--threads", "1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("another model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "o.json"));
}

ir::Tensor with_nonfinite(std::vector<std::pair<int64_t, uint16_t>> at) {
  ir::Tensor t = example_samples();
  for (const auto& [index, bits] : at) t.data<uint16_t>()[index] = bits;
  return t;
}

constexpr uint16_t kHalfNaN = 0x7e00, kHalfInf = 0x7c00;
constexpr int64_t kSample = 28 * 28;

TEST_F(CalibrateCli, NonFiniteDataExitsThreeNamingTensorAndSample) {
  TempDir dir;
  const std::string npy = dir / "nan.npy";
  ASSERT_TRUE(data::save_npy(npy, with_nonfinite({{17 * kSample + 300, kHalfNaN}})).is_ok());
  for (const std::vector<std::string>& more :
       {std::vector<std::string>{},
        std::vector<std::string>{"--shuffle", "--seed", "9", "--batch", "5"}}) {
    std::vector<std::string> args{"calibrate", example_model(), "--data", npy, "-o", dir / "c.json",
                                  "--threads", "1"};
    args.insert(args.end(), more.begin(), more.end());
    const PtqResult r = run_ptq(args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_TRUE(r.err.starts_with("ptq: error: tensor 'input'")) << r.err;
    EXPECT_NE(r.err.find("sample 17 of"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("nan.npy"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "c.json"));
}

TEST_F(CalibrateCli, IgnoreNonFiniteCountsThem) {
  TempDir dir;
  const std::string npy = dir / "nan.npy";
  ASSERT_TRUE(data::save_npy(npy, with_nonfinite({{17 * kSample + 300, kHalfNaN},
                                                 {17 * kSample + 301, kHalfNaN},
                                                 {30 * kSample, kHalfInf}}))
                  .is_ok());
  const std::string out = dir / "c.json";
  const PtqResult r = run_ptq({"calibrate", example_model(), "--data", npy, "-o", out,
                               "--ignore-nonfinite", "--threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("input (3)"), std::string::npos) << r.err;
  auto t = calib::read_cache(out);
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->run.ignore_nonfinite);
  EXPECT_EQ(t->find("input")->nonfinite, 3);
  EXPECT_EQ(t->find("input")->count, 256 * kSample - 3);
}

// A .npy file written byte by byte (format 1.0): `descr` and `shape` as NumPy writes them.
void write_npy(const std::string& path, const std::string& descr, const std::string& shape,
               size_t data_bytes) {
  std::string header =
      "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(data_bytes, '\x01');
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST_F(CalibrateCli, BadInputsExitThreeWithOneLine) {
  TempDir dir;
  struct Case {
    std::string name;
    std::vector<std::string> args;
    std::vector<std::string> needles;
  };
  write_npy(dir / "shape.npy", "<f4", "(4, 1, 27, 27)", 4 * 27 * 27 * 4);
  write_npy(dir / "complex.npy", "<c8", "(4, 1, 28, 28)", 4 * 784 * 8);
  write_npy(dir / "truncated.npy", "<f4", "(4, 1, 28, 28)", 3 * 784 * 4);
  write_npy(dir / "empty.npy", "<f4", "(0, 1, 28, 28)", 0);
  std::ofstream(dir / "garbage.npy") << "this is not a numpy file";
  fs::create_directories(dir / "empty_dir");
  const std::string out = dir / "c.json";
  const std::vector<Case> cases{
      {"shape", {"--data", dir / "shape.npy"}, {"input", "27", "28"}},
      {"dtype", {"--data", dir / "complex.npy"}, {"complex.npy"}},
      {"truncated", {"--data", dir / "truncated.npy"}, {"truncated.npy"}},
      {"garbage", {"--data", dir / "garbage.npy"}, {"garbage.npy"}},
      {"empty", {"--data", dir / "empty.npy"}, {"empty.npy"}},
      {"empty dir", {"--data", dir / "empty_dir"}, {"empty_dir"}},
      {"ranges file", {"--data", example_data(), "--ranges", dir / "garbage.npy"}, {"garbage.npy"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args{"calibrate", example_model(), "-o", out, "--threads", "1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const PtqResult r = run_ptq(args);
    EXPECT_EQ(r.exit_code, 3) << c.name << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("ptq: error: ")) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.name << ": " << r.err;
    for (const std::string& needle : c.needles) {
      EXPECT_NE(r.err.find(needle), std::string::npos) << c.name << ": " << r.err;
    }
  }
  EXPECT_FALSE(fs::exists(out));
  // Usage errors exit 2.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--method", "median", "-o", out},
        std::vector<std::string>{"--method", "percentile", "--percentile", "0", "-o", out},
        std::vector<std::string>{"--ranges-only", "--ranges", out, "-o", out},
        std::vector<std::string>{}}) {
    const PtqResult r = calibrate(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
  }
}

}  // namespace
}  // namespace ptq::calibration
