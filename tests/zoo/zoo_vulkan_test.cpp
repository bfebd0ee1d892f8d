// Every zoo model runs on the GPU with nothing left to the CPU (`ptq run --backend vulkan
// --strict`) and agrees with `--backend cpu` at batch 1 on one held-out sample: relative L2
// <= 1e-4 per output. Both backends compute in float32 in their own summation orders (~1e-6
// to 1e-5 apart on these models); a wrong kernel, view or attribute differs by far more.
// On lavapipe (CI's software device) a model takes 1-25 s in a Release build and 5-100 s under
// ASan, so the suite is two: `Zoo` (a CNN whose Flatten reads a fused Relu, a 1-D conv, a
// residual CNN, Concat and channel shuffles, a transformer with an int64 mask) runs with every
// test; `ZooLarge` (the rest) carries the label zoo_vulkan_large, run by `make test-zoo-vulkan`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/run_ptq.h"
#include "ptq/calib_cache.h"
#include "zoo.h"

namespace ptq::zoo {
namespace {

constexpr double kMaxRelL2 = 1e-4;

ptq::testing::PtqResult run_on(const Model& m, const std::string& backend,
                               const std::filesystem::path& out) {
  std::vector<std::string> args = {"run", onnx(m).string(), "-o", out.string(), "--batch", "1",
                                   "--samples", "1", "--backend", backend};
  if (backend == "vulkan") args.push_back("--strict");
  for (const std::string& a : data_args(m, "test")) args.push_back(a);
  return ptq::testing::run_ptq(args);
}

class ZooVulkan : public ::testing::TestWithParam<Model> {};

TEST_P(ZooVulkan, RunsStrictAndMatchesCpu) {
  const Model& m = GetParam();
  const auto gpu = scratch("vulkan", m.name + "_gpu");
  const auto cpu = scratch("vulkan", m.name + "_cpu");
  const auto g = run_on(m, "vulkan", gpu);
  ASSERT_EQ(g.exit_code, 0) << m.name << ": " << g.err;
  const auto c = run_on(m, "cpu", cpu);
  ASSERT_EQ(c.exit_code, 0) << m.name << ": " << c.err;
  for (const OutputError& e : compare(m, cpu, gpu)) {
    EXPECT_LE(e.rel_l2, kMaxRelL2) << m.name << " output " << e.output;
    std::printf("%s %s: rel_l2 %.3g\n", m.name.c_str(), e.output.c_str(), e.rel_l2);
  }
}

// Min-max calibration on Vulkan (device statistics, --strict) against the CPU's, 2 samples: every
// tensor's min and max within 1e-5 of its range (float rounding in other summation orders),
// the same element counts. On the quick transformer (int64 mask cast on the GPU) and cnn28.
TEST(ZooVulkanCalibration, MinMaxAgreesWithCpu) {
  const std::vector<Model> all = models();
  for (const char* name : {"bert_opset13", "cnn28"}) {
    const auto m =
        std::find_if(all.begin(), all.end(), [&](const Model& x) { return x.name == name; });
    ASSERT_NE(m, all.end()) << name << " is not in the zoo";
    const auto dir = scratch("vulkan_calibrate", name);
    std::map<std::string, calib::CalibrationTable> caches;
    for (const std::string backend : {"cpu", "vulkan"}) {
      const auto cache = dir / (backend + ".json");
      std::vector<std::string> args = {"calibrate", onnx(*m).string(), "--method", "minmax",
                                       "--samples", "2", "--batch", "1", "--backend", backend,
                                       "-o", cache.string(), "--quiet"};
      if (backend == "vulkan") args.push_back("--strict");
      for (const std::string& a : data_args(*m, "calib")) args.push_back(a);
      const auto r = ptq::testing::run_ptq(args);
      ASSERT_EQ(r.exit_code, 0) << name << " " << backend << ": " << r.err;
      auto table = calib::read_cache(cache.string());
      ASSERT_TRUE(table.has_value()) << table.status().message();
      caches[backend] = std::move(*table);
    }
    const calib::CalibrationTable& cpu = caches["cpu"];
    ASSERT_GT(cpu.tensors.size(), 3u) << name;
    EXPECT_EQ(caches["vulkan"].tensors.size(), cpu.tensors.size()) << name;
    for (const auto& [tensor, c] : cpu.tensors) {
      const calib::TensorRange* v = caches["vulkan"].find(tensor);
      ASSERT_NE(v, nullptr) << name << " " << tensor;
      const double tol = 1e-5 * std::max({std::fabs(c.min), std::fabs(c.max), 1e-6});
      EXPECT_NEAR(v->min, c.min, tol) << name << " " << tensor;
      EXPECT_NEAR(v->max, c.max, tol) << name << " " << tensor;
      EXPECT_EQ(v->count, c.count) << name << " " << tensor;
    }
  }
}

bool quick(const Model& m) {
  static const std::set<std::string> names = {"cnn28",      "kws_conv1d",    "resnet20_cifar",
                                              "squeezenet", "shufflenet_v2", "bert_opset13"};
  return names.count(m.name) > 0;
}

// The families whose ops have no Vulkan kernel yet: the sequence models' LSTM and GRU, the
// optical-flow model's GridSample and InstanceNormalization. --strict refuses them (below).
bool cpu_only(const Model& m) { return m.family == "sequence" || m.family == "flow"; }

template <typename Pred>
std::vector<Model> models_where(Pred keep) {
  std::vector<Model> out;
  for (const Model& m : models()) {
    if (keep(m)) out.push_back(m);
  }
  return out;
}

std::vector<Model> gpu_models(bool want_quick) {
  return models_where([&](const Model& m) { return !cpu_only(m) && quick(m) == want_quick; });
}

class ZooVulkanRefused : public ::testing::TestWithParam<Model> {};

// A model the GPU cannot run whole is refused under --strict with the nodes it lacks named,
// before any output is written; without --strict those nodes run on the CPU.
TEST_P(ZooVulkanRefused, StrictNamesTheNodesWithoutAKernel) {
  const Model& m = GetParam();
  const auto out = scratch("vulkan_refused", m.name);
  const auto r = run_on(m, "vulkan", out);
  EXPECT_NE(r.exit_code, 0) << m.name;
  EXPECT_NE(r.err.find("have no Vulkan kernel"), std::string::npos) << m.name << ": " << r.err;
  EXPECT_FALSE(std::filesystem::exists(out) && !std::filesystem::is_empty(out)) << m.name;
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooVulkan);
INSTANTIATE_TEST_SUITE_P(Zoo, ZooVulkan, ::testing::ValuesIn(gpu_models(true)),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(ZooLarge, ZooVulkan, ::testing::ValuesIn(gpu_models(false)),
                         [](const auto& info) { return info.param.name; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooVulkanRefused);
INSTANTIATE_TEST_SUITE_P(Zoo, ZooVulkanRefused, ::testing::ValuesIn(models_where(cpu_only)),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ptq::zoo
