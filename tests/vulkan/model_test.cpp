// The three test models (scripts/make-testdata.sh) on Vulkan against the CPU executor:
// outputs within 1e-3 relative L2, every node on the GPU (strict), resnet18's activation
// histograms differing only by values within float rounding of a bin edge, and entropy
// calibration from device statistics choosing the same bin as from host statistics for >= 99%
// of tensors, with amax within 1% for all (the transformer; see below for resnet18).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/paths.h"
#include "ptq/calibrators.h"
#include "ptq/data.h"
#include "ptq/onnx.h"
#include "vulkan_harness.h"

namespace ptq::vulkan::testing {
namespace {

using ptq::testing::test_models_dir;

struct Loaded {
  ir::Model model;
  ir::Tensor samples;
};

// `name`.onnx and its samples (`name`.`samples`.npy). Fails the test loudly when the
// generated data is missing.
bool load(const std::string& name, Loaded& out, const std::string& samples_file = "samples") {
  const std::filesystem::path dir = test_models_dir();
  auto model = onnx::load_model(dir / (name + ".onnx"));
  EXPECT_TRUE(model.has_value()) << "missing test model (run scripts/make-testdata.sh): "
                                 << model.status().message();
  auto samples = data::load_npy(dir / (name + "." + samples_file + ".npy"));
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
      EXPECT_LT(rel_l2((*got)[i].second, (*want)[i].second), 1e-3)
          << name << " output " << (*want)[i].first;
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
        if (!o.empty() && !n.op_type.starts_with("Shape") && n.op_type != "Constant")
          names.push_back(o);
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

void calibrate(runtime::Executor& exec, const Loaded& l, int64_t samples, int64_t per_batch,
               TwoPass& tp) {
  runtime::Observer* obs[] = {&tp};
  const int64_t n = std::min(samples, l.samples.shape()[0]);
  for (int pass = 0; pass < 2; ++pass) {
    tp.first_pass = pass == 0;
    for (int64_t first = 0; first < n; first += per_batch) {
      const runtime::NamedTensors in = {
          {input_name(l.model), batch(l.samples, first, std::min(per_batch, n - first))}};
      auto out = exec.run(in, obs);
      ASSERT_TRUE(out.has_value()) << out.status().message();
    }
  }
}

void compare_calibration(const std::string& name, const std::string& samples_file, int64_t samples,
                         int64_t per_batch) {
  Loaded l;
  if (!load(name, l, samples_file)) return;
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
  std::string moved;  // the tensors whose bin moved, for the failure message
  for (const auto& [tensor, wh] : want.hist) {
    const double wt = want.amax[tensor], gt = got.amax[tensor];
    ASSERT_TRUE(got.hist.count(tensor)) << tensor;
    EXPECT_NEAR(gt, wt, 1e-5 * wt) << name << " tensor " << tensor << ": min-max pass amax";
    const calib::HistogramView wv{wt, wh}, gv{gt, got.hist[tensor]};
    const calib::MethodConfig entropy;
    const double wa = calib::entropy_amax(wv, entropy), ga = calib::entropy_amax(gv, entropy);
    EXPECT_NEAR(ga, wa, 0.01 * wa) << name << " tensor " << tensor;
    ++total;
    const auto wb = calib::entropy_best_bins(wv), gb = calib::entropy_best_bins(gv);
    if (wb == gb) {
      ++same;
    } else {
      moved += fmt::format("\n  {}: bins {} (cpu) vs {} (vulkan), amax {} vs {}", tensor,
                           wb.value_or(-1), gb.value_or(-1), wa, ga);
    }
  }
  ASSERT_GT(total, 0);
  EXPECT_GE(static_cast<double>(same), 0.99 * total) << name << ": " << same << " of " << total
                                                     << " tensors chose the same bin:" << moved;
}

// Issue 7 item 4 on real activations. The device histogram of a tensor equals the host
// histogram of the same values (the GPU tensor downloaded) bit for bit, so every count that
// differs from the CPU backend's comes from the activations themselves: value i moves between
// the backends' histograms only when a bin edge of T_cpu lies within
//   delta = max_i |gpu_i - cpu_i| + |T_gpu - T_cpu|
// of cpu_i (both the value and the edge k T / 2048 move by at most delta). So the counts that
// differ are bounded by twice the number of CPU values within delta of an edge, and delta by
// float32 rounding: 2e-5 of T, about 4x the worst seen on resnet18 (5.5e-6 at layer4, grown
// from ~5e-7 at conv1 through the depth; the CPU's fast kernels are as far from its reference
// kernels).
class DeviceHistograms final : public runtime::Observer {
 public:
  explicit DeviceHistograms(std::vector<std::string> names) : names_(std::move(names)) {}
  std::vector<std::string> wanted(const ir::Graph&) override { return names_; }
  Status observe(const runtime::ObservedTensor& t) override {
    if (t.host != nullptr) return invalid_input("{} was shown with host data", t.name);
    const double T = t.stats.minmax().abs_max;
    amax[t.name] = T;
    auto& h = hist[t.name];
    h.assign(2048, 0);
    t.stats.histogram(T, h);
    return Status::ok();
  }
  std::map<std::string, double> amax;
  std::map<std::string, std::vector<uint64_t>> hist;

 private:
  std::vector<std::string> names_;
};

// Values of `cpu` whose bin position 2048 v / T lies within `width` (in bins) of an integer.
int64_t near_edges(const ir::Tensor& cpu, double T, double width) {
  int64_t n = 0;
  for (float v : cpu.span<float>()) {
    const double q = std::fabs(static_cast<double>(v)) / T * 2048.0;
    n += std::fabs(q - std::round(q)) <= width ? 1 : 0;
  }
  return n;
}

std::vector<uint64_t> host_histogram(const ir::Tensor& t, double T) {
  std::vector<uint64_t> h(2048, 0);
  calib::add_to_histogram(t.span<float>(), T, h);
  return h;
}

double abs_max(const ir::Tensor& t) {
  double m = 0.0;
  for (float v : t.span<float>()) m = std::max(m, static_cast<double>(std::fabs(v)));
  return m;
}

TEST(VulkanModels, ResNet18HistogramsDifferOnlyNearBinEdges) {
  Loaded l;
  if (!load("resnet18", l)) return;
  // Every float activation becomes an output as well, so both backends' values come back.
  ir::Model m = l.model;
  std::vector<std::string> names;
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type == "Flatten" || n.outputs[0] == m.graph.outputs[0].name) continue;
    names.push_back(n.outputs[0]);
    m.graph.outputs.push_back(ir::ValueInfo{n.outputs[0], {}, {}});
  }
  auto cpu_backend = runtime::make_cpu_backend();
  runtime::ExecutorOptions eo;
  eo.threads = 2;
  auto cpu = runtime::Executor::create(m, *cpu_backend, eo);
  ASSERT_TRUE(cpu.has_value()) << cpu.status().message();
  auto gpu = make_vulkan_executor(m, strict_options());
  ASSERT_TRUE(gpu.has_value()) << gpu.status().message();
  const runtime::NamedTensors in = {{input_name(m), batch(l.samples, 0, 1)}};
  auto want = (*cpu)->run(in);
  ASSERT_TRUE(want.has_value()) << want.status().message();
  DeviceHistograms device(names);
  runtime::Observer* obs[] = {&device};
  auto got = (*gpu)->run(in, obs);
  ASSERT_TRUE(got.has_value()) << got.status().message();
  ASSERT_EQ(got->size(), want->size());
  int64_t moved_total = 0, values_total = 0;
  for (size_t i = 1; i < want->size(); ++i) {
    const auto& [name, b] = (*want)[i];
    const ir::Tensor& a = (*got)[i].second;
    ASSERT_EQ(a.shape(), b.shape()) << name;
    ASSERT_TRUE(device.hist.count(name)) << name;
    const double Ta = device.amax[name], Tb = abs_max(b);
    ASSERT_GT(Tb, 0.0) << name;
    // The device statistics are exact on the device's values.
    EXPECT_EQ(Ta, abs_max(a)) << name;
    EXPECT_EQ(device.hist[name], host_histogram(a, Ta)) << name;
    // The values differ by float rounding only.
    double delta = std::fabs(Ta - Tb);
    for (int64_t k = 0; k < b.size(); ++k) {
      delta = std::max(delta, std::fabs(a.as_double(k) - b.as_double(k)) + std::fabs(Ta - Tb));
    }
    EXPECT_LE(delta, 2e-5 * Tb) << name;
    const std::vector<uint64_t> hb = host_histogram(b, Tb);
    int64_t moved = 0;
    for (size_t k = 0; k < hb.size(); ++k) {
      moved += std::llabs(static_cast<int64_t>(device.hist[name][k]) - static_cast<int64_t>(hb[k]));
    }
    EXPECT_LE(moved, 2 * near_edges(b, Tb, 2048.0 * delta / Tb * (1.0 + 1e-6))) << name;
    moved_total += moved;
    values_total += b.size();
  }
  // About one value in 10^3 to 10^4 changes bin: the disagreement calibration has to live with.
  EXPECT_LE(moved_total, values_total / 500);
}

// The thresholds, unchanged, on the transformer. Not on resnet18: its weights are random
// and its samples synthetic blobs, and on them entropy's choice is not determined by the data
// to float32 precision. Measured: the CPU backend against itself with every input value nudged
// by one ulp picks other bins for /layer4/layer4.0/relu/Relu_output_0 on the 8 samples (1841 vs
// 1918, amax 4.35 vs 4.53: exactly the 4% Vulkan showed) and for
// /layer2/layer2.1/conv1/Conv_output_0 on resnet18.calib.npy's 32 (1883 vs 1758, amax 5.46 vs
// 5.10: again exactly Vulkan's). The KL curve is that flat near its minimum, so any two float32
// implementations disagree there; with 49 tensors, >= 99% means all 49. What the backend does
// control, its statistics, is bounded on resnet18 above; calibration agreement on a trained
// model with real data is tested end to end in cli_test.cpp (the example, 256 images). On
// lavapipe resnet18 also costs ~7 s of CPU per calibration sample (two passes), too much for CI.
TEST(VulkanModels, TransformerCalibrationAgreesWithCpu) {
  compare_calibration("transformer", "samples", 8, 4);
}

}  // namespace
}  // namespace ptq::vulkan::testing

