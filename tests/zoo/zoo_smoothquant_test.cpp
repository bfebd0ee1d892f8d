// SmoothQuant on a zoo transformer given the outlier channels trained language models have: the
// GPT decoder with three entries of its LayerNorm gamma (shared by every LayerNorm: the export
// stores the equal initial values once) set 20-45x the others. The smoothed float model computes
// what the original does; `ptq quantize --smoothquant` gives a higher INT8 SQNR against FP32
// than without (the gain is printed; docs/SMOOTHQUANT.md quotes it); and `--cache` with the
// cache that run wrote reproduces its model byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/run_ptq.h"
#include "common/files.h"
#include "ptq/calibration.h"
#include "ptq/data.h"
#include "ptq/ir/owned_copy.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"
#include "zoo.h"

namespace ptq::zoo {
namespace {

using ptq::testing::read_file;

namespace fs = std::filesystem;

constexpr int kCalibSamples = 4;
constexpr int kTestSamples = 8;

Model gpt() {
  for (const Model& m : models()) {
    if (m.name == "gpt_decoder") return m;
  }
  ADD_FAILURE() << "gpt_decoder is not in the zoo manifest under " << dir();
  return {};
}

// The GPT decoder with outlier channels in its LayerNorms' gamma, saved under `out`.
fs::path outlier_model(const Model& m, const fs::path& out) {
  auto model = onnx::load_model(onnx(m));
  EXPECT_TRUE(model.has_value()) << model.status().message();
  ir::Tensor* gamma = model->graph.mutable_initializer("blocks.0.norm1.weight");
  EXPECT_NE(gamma, nullptr);
  if (gamma != nullptr) {
    ir::Tensor boosted = ir::owned_copy(*gamma);
    boosted.data<float>()[3] *= 30.0f;
    boosted.data<float>()[77] *= -45.0f;
    boosted.data<float>()[200] *= 20.0f;
    model->graph.set_initializer("blocks.0.norm1.weight", std::move(boosted));
  }
  const fs::path path = out / "gpt_outliers.onnx";
  EXPECT_TRUE(onnx::save_model(*model, path).is_ok());
  return path;
}

data::Dataset dataset(const Model& m, const ir::Model& model, const std::string& split,
                      int64_t samples) {
  data::DatasetSpec spec;
  for (const std::string& input : m.inputs) {
    spec.sources.push_back({input, (dir() / m.name / split / (input + ".npy")).string()});
  }
  spec.batch = 4;
  spec.samples = samples;
  auto ds = data::Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  EXPECT_TRUE(ds->bind(model.graph).is_ok());
  return std::move(*ds);
}

// Relative L2 of `b`'s outputs against `a`'s over `data`.
double relative_l2(const ir::Model& a, const ir::Model& b, const data::Dataset& data) {
  const auto backend = runtime::make_cpu_backend();
  auto ea = runtime::Executor::create(a, *backend);
  auto eb = runtime::Executor::create(b, *backend);
  EXPECT_TRUE(ea.has_value() && eb.has_value());
  double diff = 0.0, norm = 0.0;
  for (int64_t batch = 0; batch < data.num_batches(); ++batch) {
    auto in = data.batch(batch);
    auto ya = (*ea)->run(*in);
    auto yb = (*eb)->run(*in);
    EXPECT_TRUE(ya.has_value() && yb.has_value());
    for (size_t o = 0; o < ya->size(); ++o) {
      std::span<const float> x = (*ya)[o].second.span<float>(), y = (*yb)[o].second.span<float>();
      for (size_t i = 0; i < x.size(); ++i) {
        diff += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        norm += double(x[i]) * x[i];
      }
    }
  }
  return std::sqrt(diff / norm);
}

std::vector<std::string> quantize_args(const Model& m, const fs::path& model, const fs::path& out) {
  std::vector<std::string> args = {"quantize", model.string(), "-o", out.string(),
                                   "--samples", std::to_string(kCalibSamples), "--batch", "4",
                                   "--threads", "1", "-q"};
  for (const std::string& a : data_args(m, "calib")) args.push_back(a);
  return args;
}

// The INT8 model's SQNR (dB) against the float one on the held-out samples (`ptq compare`).
double sqnr_db(const Model& m, const fs::path& fp32, const fs::path& int8) {
  std::vector<std::string> args = {"compare", fp32.string(), int8.string(), "--json",
                                   "--samples", std::to_string(kTestSamples), "--threads", "1"};
  for (const std::string& a : data_args(m, "test")) args.push_back(a);
  const auto r = ptq::testing::run_ptq(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return NAN;
  return nlohmann::json::parse(r.out).at("outputs").at(0).at("sqnr_db").get<double>();
}

TEST(ZooSmoothQuant, SmoothedFloatModelComputesTheSame) {
  const Model m = gpt();
  const fs::path dir = scratch("smoothquant", "float");
  auto original = onnx::load_model(outlier_model(m, dir));
  ASSERT_TRUE(original.has_value());
  auto smoothed = onnx::load_model(dir / "gpt_outliers.onnx");
  ASSERT_TRUE(smoothed.has_value());
  const auto backend = runtime::make_cpu_backend();
  auto record = calibration::smoothquant(*smoothed, *backend,
                                         dataset(m, *smoothed, "calib", kCalibSamples), {});
  ASSERT_TRUE(record.has_value()) << record.status().message();
  // Every LayerNorm output read by a MatMul (4 blocks x 2, and the final norm before the head).
  EXPECT_EQ(record->factors.size(), 9u);
  const double rel = relative_l2(*original, *smoothed, dataset(m, *original, "test", kTestSamples));
  std::printf("gpt_decoder with outlier channels: smoothed vs original relative L2 %.2e\n", rel);
  EXPECT_LE(rel, 1e-5);
}

TEST(ZooSmoothQuant, RaisesInt8SqnrAndTheCacheReproducesTheModel) {
  const Model m = gpt();
  const fs::path dir = scratch("smoothquant", "quantize");
  const fs::path fp32 = outlier_model(m, dir);
  auto plain = ptq::testing::run_ptq(quantize_args(m, fp32, dir / "plain.onnx"));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::vector<std::string> args = quantize_args(m, fp32, dir / "smooth.onnx");
  args.push_back("--smoothquant");
  auto smooth = ptq::testing::run_ptq(args);
  ASSERT_EQ(smooth.exit_code, 0) << smooth.err;

  const double without = sqnr_db(m, fp32, dir / "plain.onnx");
  const double with = sqnr_db(m, fp32, dir / "smooth.onnx");
  std::printf("gpt_decoder with outlier channels, INT8 SQNR: %.1f dB, --smoothquant %.1f dB "
              "(gain %.1f dB)\n", without, with, with - without);
  EXPECT_GT(with, without + 1.0);

  auto again = ptq::testing::run_ptq({"quantize", fp32.string(), "--cache",
                                      (dir / "smooth.calib.json").string(), "-o",
                                      (dir / "from_cache.onnx").string(), "-q"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_file(dir / "from_cache.onnx"), read_file(dir / "smooth.onnx"));

  // The cache decides the smoothing; a --smoothquant it contradicts is a usage error.
  auto other = ptq::testing::run_ptq({"quantize", fp32.string(), "--cache",
                                      (dir / "smooth.calib.json").string(), "-o",
                                      (dir / "x.onnx").string(), "--smoothquant=0.8", "-q"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("was calibrated with alpha 0.5"), std::string::npos) << other.err;
  auto none = ptq::testing::run_ptq({"quantize", fp32.string(), "--cache",
                                     (dir / "plain.calib.json").string(), "-o",
                                     (dir / "x.onnx").string(), "--smoothquant", "-q"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--smoothquant needs --data"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));
}

TEST(ZooSmoothQuant, AlphaOutsideZeroToOneIsAUsageError) {
  const Model m = gpt();
  const fs::path dir = scratch("smoothquant", "alpha");
  for (const char* alpha : {"1.5", "-0.25"}) {
    std::vector<std::string> args = quantize_args(m, onnx(m), dir / "x.onnx");
    args.push_back(std::string("--smoothquant=") + alpha);
    const auto r = ptq::testing::run_ptq(args);
    EXPECT_EQ(r.exit_code, 2) << alpha;
    EXPECT_NE(r.err.find("alpha must be in [0, 1]"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "x.onnx"));
  }
  // sensitivity takes the same option, checked the same way.
  std::vector<std::string> args = {"sensitivity", onnx(m).string(), "-o",
                                   (dir / "s.json").string(), "--smoothquant=2", "-q"};
  for (const std::string& a : data_args(m, "calib")) args.push_back(a);
  args.push_back("--eval");
  args.push_back((zoo::dir() / m.name / "test" / "input_ids.npy").string());
  const auto r = ptq::testing::run_ptq(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("alpha must be in [0, 1] (got 2)"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "s.json"));
}

}  // namespace
}  // namespace ptq::zoo
