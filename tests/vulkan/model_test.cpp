// The three test models (scripts/make-testdata.sh) on Vulkan against the CPU executor:
// outputs within 1e-3 relative L2, every node on the GPU (strict), and entropy calibration
// from device statistics choosing the same bin as from host statistics for >= 99% of tensors,
// with amax within 1% for all.
#include <cstdlib>
#include <filesystem>
#include <map>

#include "ptq/calibrators.h"
#include "ptq/data.h"
#include "ptq/onnx.h"
#include "vulkan_harness.h"

namespace ptq::vulkan::testing {
namespace {

std::filesystem::path test_data() {
  const char* env = std::getenv("PTQ_TEST_DATA");
  return env != nullptr && *env != '\0' ? env : PTQ_TEST_DATA;
}

struct Loaded {
  ir::Model model;
  ir::Tensor samples;
};

// Fails the test loudly when the generated data is missing.
bool load(const std::string& name, Loaded& out) {
  const std::filesystem::path dir = test_data() / "models";
  auto model = onnx::load_model(dir / (name + ".onnx"));
  EXPECT_TRUE(model.has_value()) << "missing test model (run scripts/make-testdata.sh): "
                                 << model.status().message();
  auto samples = data::load_npy(dir / (name + ".samples.npy"));
  EXPECT_TRUE(samples.has_value()) << "missing test samples: " << samples.status().message();
  if (!model || !samples) return false;
  out.model = std::move(model).value();
  out.samples = std::move(samples).value();
  return true;
}

// Samples [first, first + count) as a borrowed batch.
ir::Tensor batch(const ir::Tensor& samples, int64_t first, int64_t count) {
  ir::Shape shape = samples.shape();
  const int64_t per = samples.size() / shape[0];
  shape[0] = count;
  return ir::Tensor::borrow(samples.dtype(), shape, samples.data<float>() + first * per);
}

std::string input_name(const ir::Model& m) { return m.graph.real_inputs().front()->name; }

void compare_outputs(const std::string& name, int64_t count) {
  Loaded l;
  if (!load(name, l)) return;
  auto cpu_backend = runtime::make_cpu_backend();
  runtime::ExecutorOptions eo;
  eo.threads = 2;
  auto cpu = runtime::Executor::create(l.model, *cpu_backend, eo);
  ASSERT_TRUE(cpu.has_value()) << cpu.status().message();
  auto gpu = make_vulkan_executor(l.model, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  const runtime::NamedTensors in = {{input_name(l.model), batch(l.samples, 0, count)}};
  auto want = (*cpu)->run(in);
  ASSERT_TRUE(want.has_value()) << want.status().message();
  for (int rep = 0; rep < 2; ++rep) {  // the second run replays the recorded program
    auto got = (*gpu)->run(in);
    ASSERT_TRUE(got.has_value()) << got.status().message();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_LT(rel_l2((*got)[i].second, (*want)[i].second), 1e-3) << name << " output " << (*want)[i].first;
    }
  }
}

// Small batches: lavapipe runs shaders on the CI machine's two cores.
TEST(VulkanModels, ResNet18MatchesCpu) { compare_outputs("resnet18", 1); }
TEST(VulkanModels, MobileNetV2MatchesCpu) { compare_outputs("mobilenet_v2", 2); }
TEST(VulkanModels, TransformerMatchesCpu) { compare_outputs("transformer", 8); }

// The two passes of histogram calibration over every observed activation.
class TwoPass final : public runtime::Observer {
 public:
  std::vector<std::string> wanted(const ir::Graph& g) override {
    std::vector<std::string> names;
    for (const ir::Node& n : g.nodes) {
      for (const std::string& o : n.outputs) {
        if (!o.empty() && !n.op_type.starts_with("Shape") && n.op_type != "Constant") names.push_back(o);
      }
    }
    return names;
  }
  Status observe(const runtime::ObservedTensor& t) override {
    if (t.dtype != ir::DType::kFloat32) return Status::ok();
    if (first_pass) {
      amax[t.name] = std::max(amax[t.name], t.stats.minmax().abs_max);
    } else {
      auto& h = hist[t.name];
      h.resize(2048, 0);
      t.stats.histogram(amax[t.name], h);
    }
    return Status::ok();
  }
  bool first_pass = true;
  std::map<std::string, double> amax;
  std::map<std::string, std::vector<uint64_t>> hist;
};

void calibrate(runtime::Executor& exec, const Loaded& l, int64_t samples, int64_t per_batch, TwoPass& tp) {
  runtime::Observer* obs[] = {&tp};
  const int64_t n = std::min(samples, l.samples.shape()[0]);
  for (int pass = 0; pass < 2; ++pass) {
    tp.first_pass = pass == 0;
    for (int64_t first = 0; first < n; first += per_batch) {
      const runtime::NamedTensors in = {{input_name(l.model), batch(l.samples, first, std::min(per_batch, n - first))}};
      auto out = exec.run(in, obs);
      ASSERT_TRUE(out.has_value()) << out.status().message();
    }
  }
}

void compare_calibration(const std::string& name, int64_t samples, int64_t per_batch) {
  Loaded l;
  if (!load(name, l)) return;
  auto cpu_backend = runtime::make_cpu_backend();
  runtime::ExecutorOptions eo;
  eo.threads = 2;
  auto cpu = runtime::Executor::create(l.model, *cpu_backend, eo);
  ASSERT_TRUE(cpu.has_value()) << cpu.status().message();
  auto gpu = make_vulkan_executor(l.model, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  TwoPass want, got;
  calibrate(**cpu, l, samples, per_batch, want);
  calibrate(**gpu, l, samples, per_batch, got);
  ASSERT_EQ(got.hist.size(), want.hist.size());
  int same = 0, total = 0;
  for (const auto& [tensor, wh] : want.hist) {
    const double wt = want.amax[tensor], gt = got.amax[tensor];
    ASSERT_TRUE(got.hist.count(tensor)) << tensor;
    const calib::HistogramView wv{wt, wh}, gv{gt, got.hist[tensor]};
    const calib::MethodConfig entropy;
    const double wa = calib::entropy_amax(wv, entropy), ga = calib::entropy_amax(gv, entropy);
    EXPECT_NEAR(ga, wa, 0.01 * wa) << name << " tensor " << tensor;
    ++total;
    same += calib::entropy_best_bins(wv) == calib::entropy_best_bins(gv) ? 1 : 0;
  }
  ASSERT_GT(total, 0);
  EXPECT_GE(static_cast<double>(same), 0.99 * total) << name << ": " << same << " of " << total
                                                     << " tensors chose the same bin";
}

TEST(VulkanModels, ResNet18CalibrationAgreesWithCpu) { compare_calibration("resnet18", 8, 4); }
TEST(VulkanModels, TransformerCalibrationAgreesWithCpu) { compare_calibration("transformer", 8, 4); }

}  // namespace
}  // namespace ptq::vulkan::testing
