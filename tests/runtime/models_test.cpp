// Real models (made by scripts/make-testdata.sh) run by the CPU backend and by ONNX Runtime
// (tests/runtime/ort_run.js through node) on the same samples; outputs must agree within
// 1e-4 relative L2 at batch 1 and 4. Missing data, node or ORT fails the test.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/ort_runner.h"
#include "common/paths.h"
#include "kernel_harness.h"
#include "npy_lite.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::runtime::testing {
namespace {

using ptq::testing::test_data_dir;

namespace fs = std::filesystem;

// Runs ORT on the first `count` samples; returns the output folder.
fs::path run_ort(const fs::path& model, const fs::path& samples, int count,
                 const std::string& tag) {
  const fs::path out = fs::path(PTQ_BINARY_DIR) / "ort-out" / tag;
  fs::remove_all(out);
  ptq::testing::run_ort_script(
      "runtime/ort_run.js",
      {model.string(), samples.string(), std::to_string(count), out.string(), "1"});
  return out;
}

// The first `count` samples as one batch.
ir::Tensor first_samples(const ir::Tensor& all, int64_t count) {
  ir::Shape shape = all.shape();
  shape[0] = count;
  ir::Tensor t(all.dtype(), shape);
  std::memcpy(t.raw(), all.raw(), t.nbytes());
  return t;
}

void check_model(const std::string& name) {
  const fs::path dir = test_data_dir() / "models";
  const fs::path model_path = dir / (name + ".onnx"), samples_path = dir / (name + ".samples.npy");
  ASSERT_TRUE(fs::exists(model_path) && fs::exists(samples_path))
      << model_path << " or its samples are missing: run scripts/make-testdata.sh "
      << test_data_dir();
  auto model = onnx::load_model(model_path);
  ASSERT_TRUE(model.has_value()) << model.status().message();
  auto samples = read_npy(samples_path);
  ASSERT_TRUE(samples.has_value()) << samples.status().message();
  auto backend = make_cpu_backend();
  auto exec = Executor::create(*model, *backend, ExecutorOptions{2});
  ASSERT_TRUE(exec.has_value()) << exec.status().message();
  const std::string input = model->graph.real_inputs().at(0)->name;
  for (int batch : {1, 4}) {
    NamedTensors in;
    in.emplace_back(input, first_samples(*samples, batch));
    auto ours = (*exec)->run(in);
    ASSERT_TRUE(ours.has_value()) << ours.status().message();
    const fs::path ort_dir =
        run_ort(model_path, samples_path, batch, fmt::format("{}-b{}", name, batch));
    for (const auto& [out_name, tensor] : *ours) {
      auto theirs = read_npy(ort_dir / (out_name + ".npy"));
      ASSERT_TRUE(theirs.has_value()) << theirs.status().message();
      EXPECT_EQ(tensor.shape(), theirs->shape()) << name << " " << out_name;
      const double err = rel_l2(tensor, *theirs);
      EXPECT_LE(err, 1e-4) << name << " output " << out_name << " batch " << batch;
      ::testing::Test::RecordProperty(fmt::format("{}_b{}_{}_rel_l2", name, batch, out_name),
                                      fmt::format("{:.3g}", err));
    }
  }
}

TEST(Models, ResNet18MatchesOnnxRuntime) { check_model("resnet18"); }
TEST(Models, MobileNetV2MatchesOnnxRuntime) { check_model("mobilenet_v2"); }
// Needs the `ops` kernels too (Erf, ReduceMean, Shape, Gather, …).
TEST(Models, TransformerMatchesOnnxRuntime) { check_model("transformer"); }

// Each instruction-set level this CPU has (forced through CpuBackendOptions::isa) runs a model
// to the default level's outputs within float rounding: the levels sum in other orders (other
// micro-kernel shapes, Winograd only with AVX-512), never other formulas.
void check_levels(const std::string& name) {
  const fs::path dir = test_data_dir() / "models";
  auto model = onnx::load_model(dir / (name + ".onnx"));
  ASSERT_TRUE(model.has_value()) << model.status().message();
  auto samples = read_npy(dir / (name + ".samples.npy"));
  ASSERT_TRUE(samples.has_value()) << samples.status().message();
  NamedTensors in;
  in.emplace_back(model->graph.real_inputs().at(0)->name, first_samples(*samples, 2));
  auto run_at = [&](CpuIsa isa) {
    CpuBackendOptions options;
    options.isa = isa;
    auto backend = make_cpu_backend(options);
    auto exec = Executor::create(*model, *backend, ExecutorOptions{2});
    EXPECT_TRUE(exec.has_value()) << exec.status().message();
    auto out = (*exec)->run(in);
    EXPECT_TRUE(out.has_value()) << out.status().message();
    return std::move(*out);
  };
  const NamedTensors want = run_at(CpuIsa::kAuto);
  for (CpuIsa isa : {CpuIsa::kBaseline, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (static_cast<int>(isa) > static_cast<int>(best_cpu_isa())) continue;
    const NamedTensors got = run_at(isa);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_LE(rel_l2(got[i].second, want[i].second), 1e-5)
          << name << " " << got[i].first << " at " << cpu_isa_name(isa);
    }
  }
}

TEST(Models, EveryCpuIsaMatchesTheDefaultOnMobileNetV2) { check_levels("mobilenet_v2"); }
TEST(Models, EveryCpuIsaMatchesTheDefaultOnTheTransformer) { check_levels("transformer"); }

}  // namespace
}  // namespace ptq::runtime::testing
