// `--backend vulkan` end to end on the bundled example (examples/fashion_cnn.onnx and its
// data), on device 0 (Mesa's lavapipe in CI) against `--backend cpu`: run, calibrate, quantize,
// eval and compare accept it and agree with the CPU; --strict, and a device that does not
// exist. Skipped when the loader finds no Vulkan device.
//
// The bounds: both backends compute in float32 and differ by rounding (~1e-6 relative per
// value), so outputs agree to cosine >= 0.9999 (in fact 1 - 1e-10), min/max exactly up to
// that rounding, and calibration the way: the same entropy bin for >= 99% of tensors,
// amax within 1% for all. A histogram count may differ only where a value lies within that
// rounding of a bin edge: a few per 10^5 values, bounded here by 1e-3 of the tensor's count.
// Top-1 may flip for an image whose two best logits are within rounding of each other: at most
// one of the 150 test images used. Sample counts are small where lavapipe pays per image (these
// tests were the longest of the sanitized CI run).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_ptq.h"
#include "common/files.h"
#include "common/paths.h"
#include "ptq/calib_cache.h"
#include "ptq/calibrators.h"
#include "ptq/data.h"
#include "ptq/onnx.h"

namespace {

using ptq::testing::read_file;

namespace fs = std::filesystem;
using ptq::testing::PtqResult;
using ptq::testing::run_ptq;
using namespace ptq;

using ptq::testing::calib_npy;
using ptq::testing::example_dir;
using ptq::testing::example_model;
using ptq::testing::test_labels;
using ptq::testing::test_npy;

const std::vector<std::string> kBackends = {"cpu", "vulkan"};

// A folder private to the running test, under the build tree.
class Scratch {
 public:
  Scratch() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ptq::testing::scratch_dir(
        {"vulkan-cli", std::string(info->name()) + "-" + std::to_string(::getpid())});
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

class VulkanCli : public ::testing::Test {
 protected:
  void SetUp() override {
    static const PtqResult devices = run_ptq({"info", "--devices"});
    if (devices.exit_code != 0 || devices.out.find("device 0:") == std::string::npos) {
      FAIL() << "no Vulkan device (install mesa-vulkan-drivers for lavapipe): " << devices.err;
    }
  }
};

nlohmann::json parse_json(const PtqResult& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out;
  return j;
}

ir::Tensor load(const std::string& path) {
  auto t = data::load_npy(path);
  EXPECT_TRUE(t.has_value()) << t.status().message();
  return t.has_value() ? std::move(*t) : ir::Tensor{};
}

double cosine(const ir::Tensor& a, const ir::Tensor& b) {
  double ab = 0.0, aa = 0.0, bb = 0.0;
  for (int64_t i = 0; i < a.size(); ++i) {
    ab += a.as_double(i) * b.as_double(i);
    aa += a.as_double(i) * a.as_double(i);
    bb += b.as_double(i) * b.as_double(i);
  }
  return ab / std::sqrt(aa * bb);
}

// `ptq run` of the float model on the first 200 test images, written to `out`.
TEST_F(VulkanCli, RunAgreesWithCpu) {
  Scratch dir;
  std::map<std::string, ir::Tensor> logits;
  for (const std::string& backend : kBackends) {
    auto r = run_ptq({"run", example_model(), "--data", test_npy(), "--samples", "200", "--batch",
                      "50", "--backend", backend, "-o", dir / backend, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << backend << ": " << r.err;
    EXPECT_EQ(r.err, "") << backend;
    logits[backend] = load(dir / backend + "/logits.npy");
  }
  const ir::Tensor& cpu = logits["cpu"];
  const ir::Tensor& vk = logits["vulkan"];
  ASSERT_EQ(vk.shape(), cpu.shape());
  ASSERT_EQ(cpu.shape(), (ir::Shape{200, 10}));
  EXPECT_GE(cosine(vk, cpu), 0.9999);
  double scale = 0.0, worst = 0.0;
  for (int64_t i = 0; i < cpu.size(); ++i) {
    scale = std::max(scale, std::fabs(cpu.as_double(i)));
    worst = std::max(worst, std::fabs(vk.as_double(i) - cpu.as_double(i)));
  }
  EXPECT_LE(worst, 1e-4 * scale) << "max abs diff of the logits";
}

// Entropy calibration over 128 calibration images: the same entropy bin for >= 99% of the
// tensors, amax within 1% for all, min/max and histograms equal up to float rounding.
TEST_F(VulkanCli, CalibrateAgreesWithCpu) {
  Scratch dir;
  std::map<std::string, calib::CalibrationTable> caches;
  for (const std::string& backend : kBackends) {
    const std::string cache = dir / (backend + ".json");
    auto r = run_ptq({"calibrate", example_model(), "--data", calib_npy(), "--samples", "128",
                      "--method", "entropy", "--backend", backend, "-o", cache, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << backend << ": " << r.err;
    auto table = calib::read_cache(cache);
    ASSERT_TRUE(table.has_value()) << table.status().message();
    EXPECT_EQ(table->run.backend, backend);
    caches[backend] = std::move(*table);
  }
  const calib::CalibrationTable& cpu = caches["cpu"];
  const calib::CalibrationTable& vk = caches["vulkan"];
  ASSERT_EQ(vk.tensors.size(), cpu.tensors.size());
  int same_bin = 0, total = 0;
  for (const auto& [name, c] : cpu.tensors) {
    const calib::TensorRange* v = vk.find(name);
    ASSERT_NE(v, nullptr) << name;
    const double tol = 1e-5 * std::max({std::fabs(c.min), std::fabs(c.max), 1e-6});
    EXPECT_NEAR(v->min, c.min, tol) << name;
    EXPECT_NEAR(v->max, c.max, tol) << name;
    EXPECT_EQ(v->count, c.count) << name;
    EXPECT_NEAR(v->amax, c.amax, 0.01 * c.amax) << name;
    ASSERT_EQ(v->histogram.size(), c.histogram.size()) << name;
    int64_t moved = 0;
    for (size_t b = 0; b < c.histogram.size(); ++b) {
      moved +=
          std::llabs(static_cast<int64_t>(v->histogram[b]) - static_cast<int64_t>(c.histogram[b]));
    }
    EXPECT_LE(static_cast<double>(moved), 2e-3 * static_cast<double>(c.count)) << name;
    const calib::HistogramView cv{c.hist_max, c.histogram}, vv{v->hist_max, v->histogram};
    same_bin += calib::entropy_best_bins(cv) == calib::entropy_best_bins(vv) ? 1 : 0;
    ++total;
  }
  ASSERT_GT(total, 10);
  EXPECT_GE(same_bin, 0.99 * total) << same_bin << " of " << total << " tensors chose the same bin";
}

// Every float initializer of a Q/DQ model by name (the scales ptq quantize wrote).
std::map<std::string, double> scales_of(const std::string& path) {
  std::map<std::string, double> s;
  auto m = onnx::load_model(path);
  EXPECT_TRUE(m.has_value()) << m.status().message();
  if (!m) return s;
  for (const ir::Node& n : m->graph.nodes) {
    if (n.op_type != "QuantizeLinear" || n.inputs.size() < 2) continue;
    const ir::Tensor* t = m->graph.initializer(n.inputs[1]);
    if (t != nullptr && t->size() == 1) s[n.inputs[0]] = t->as_double(0);
  }
  return s;
}

// `ptq quantize --data` calibrates on the chosen backend (min-max here: one pass): the
// activation scales agree within 1%; `ptq eval` of the float and INT8 models within one image.
TEST_F(VulkanCli, QuantizeAndEvalAgreeWithCpu) {
  Scratch dir;
  std::map<std::string, std::map<std::string, double>> scales;
  std::map<std::string, int64_t> top1_fp32, top1_int8;
  for (const std::string& backend : kBackends) {
    const std::string out = dir / (backend + ".onnx");
    auto q = run_ptq({"quantize", example_model(), "--data", calib_npy(), "--samples", "64",
                      "--method", "minmax", "--backend", backend, "-o", out, "--quiet"});
    ASSERT_EQ(q.exit_code, 0) << backend << ": " << q.err;
    scales[backend] = scales_of(out);
    for (const auto& [model, top1] :
         {std::pair{example_model(), &top1_fp32}, std::pair{out, &top1_int8}}) {
      auto e = run_ptq({"eval", model, "--data", test_npy(), "--labels", test_labels(), "--samples",
                        "150", "--batch", "50", "--backend", backend, "--json"});
      ASSERT_EQ(e.exit_code, 0) << backend << ": " << e.err;
      const auto j = parse_json(e);
      EXPECT_EQ(j["samples"].get<int64_t>(), 150);
      (*top1)[backend] = j["top1_correct"].get<int64_t>();
    }
  }
  ASSERT_FALSE(scales["cpu"].empty());
  ASSERT_EQ(scales["vulkan"].size(), scales["cpu"].size());
  for (const auto& [tensor, s] : scales["cpu"]) {
    ASSERT_TRUE(scales["vulkan"].count(tensor)) << tensor;
    EXPECT_NEAR(scales["vulkan"][tensor], s, 0.01 * s) << tensor;
  }
  EXPECT_GT(top1_fp32["cpu"], 125);  // a trained classifier: ~93% on these images
  EXPECT_LE(std::llabs(top1_fp32["vulkan"] - top1_fp32["cpu"]), 1);
  EXPECT_LE(std::llabs(top1_int8["vulkan"] - top1_int8["cpu"]), 1);
}

// `ptq compare FP32 INT8` reports the same agreement on both backends.
TEST_F(VulkanCli, CompareAgreesWithCpu) {
  Scratch dir;
  const std::string int8 = dir / "int8.onnx";
  auto q = run_ptq({"quantize", example_model(), "--data", calib_npy(), "--samples", "64",
                    "--method", "minmax", "-o", int8, "--quiet"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  std::map<std::string, nlohmann::json> reports;
  for (const std::string& backend : kBackends) {
    auto r = run_ptq({"compare", example_model(), int8, "--data", test_npy(), "--samples", "100",
                      "--batch", "50", "--backend", backend, "--json"});
    ASSERT_EQ(r.exit_code, 0) << backend << ": " << r.err;
    reports[backend] = parse_json(r);
  }
  const auto& c = reports["cpu"]["outputs"][0];
  const auto& v = reports["vulkan"]["outputs"][0];
  EXPECT_EQ(v["name"], "logits");
  EXPECT_GE(c["cosine"].get<double>(), 0.99);
  EXPECT_NEAR(v["cosine"].get<double>(), c["cosine"].get<double>(), 1e-4);
  EXPECT_NEAR(v["sqnr_db"].get<double>(), c["sqnr_db"].get<double>(), 0.1);
  EXPECT_LE(std::llabs(reports["vulkan"]["top1_same"].get<int64_t>() -
                       reports["cpu"]["top1_same"].get<int64_t>()),
            1);
}

// x[batch, 4] ──► Relu ──► r ──► Tile(repeats [1, 2]) ──► y[batch, 8]
// Tile has no Vulkan kernel: it runs on the CPU, or --strict refuses the model.
ir::Model tile_model() {
  ir::Model m;
  m.set_opset("", 13);
  ir::Graph& g = m.graph;
  g.inputs.push_back(
      {"x",
       {ir::DType::kFloat32, std::vector<ir::Dim>{ir::Dim::symbol("batch"), ir::Dim::of(4)}, {}},
       {}});
  g.outputs.push_back({"y", {ir::DType::kFloat32, {}, {}}, {}});
  const std::vector<int64_t> repeats = {1, 2};
  g.set_initializer("repeats", ir::make_tensor<int64_t>({2}, std::span<const int64_t>(repeats)));
  ir::Node relu;
  relu.op_type = "Relu";
  relu.name = "relu";
  relu.inputs = {"x"};
  relu.outputs = {"r"};
  ir::Node tile;
  tile.op_type = "Tile";
  tile.name = "tile";
  tile.inputs = {"r", "repeats"};
  tile.outputs = {"y"};
  g.nodes = {relu, tile};
  return m;
}

TEST_F(VulkanCli, StrictRefusesCpuFallback) {
  Scratch dir;
  ASSERT_TRUE(onnx::save_model(tile_model(), dir / "tile.onnx").is_ok());
  const std::vector<float> xs = {-1, 2, -3, 4, 5, -6, 7, -8, 0.5f, 0.25f, -0.125f, 1};
  ASSERT_TRUE(
      data::save_npy(dir / "x.npy", ir::make_tensor<float>({3, 4}, std::span<const float>(xs)))
          .is_ok());

  // Without --strict: Tile runs on the CPU, the run says so once, and the result is right.
  auto r = run_ptq({"run", dir / "tile.onnx", "--data", dir / "x.npy", "--backend", "vulkan", "-o",
                    dir / "out"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ptq: note: vulkan: 1 node(s) run on the CPU: Tile node 'tile'"),
            std::string::npos)
      << r.err;
  const ir::Tensor y = load(dir / "out/y.npy");
  ASSERT_EQ(y.shape(), (ir::Shape{3, 8}));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 8; ++j) {
      EXPECT_EQ(y.as_double(i * 8 + j),
                std::max(0.0, static_cast<double>(xs[static_cast<size_t>(i * 4 + j % 4)])));
    }
  }
  // --quiet silences the note.
  auto quiet = run_ptq({"run", dir / "tile.onnx", "--data", dir / "x.npy", "--backend", "vulkan",
                        "-o", dir / "out2", "--quiet"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");

  // --strict: one error line naming the node, a runtime failure (exit 1), no output written.
  auto s = run_ptq({"run", dir / "tile.onnx", "--data", dir / "x.npy", "--backend", "vulkan",
                    "--strict", "-o", dir / "out3"});
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_TRUE(s.err.starts_with("ptq: error: ")) << s.err;
  EXPECT_NE(s.err.find("Tile node 'tile'"), std::string::npos) << s.err;
  EXPECT_EQ(std::count(s.err.begin(), s.err.end(), '\n'), 1) << s.err;
  EXPECT_FALSE(fs::exists(dir / "out3/y.npy"));

  // The example model runs entirely on the GPU, so --strict accepts it.
  auto ok = run_ptq({"eval", example_model(), "--data", test_npy(), "--labels", test_labels(),
                     "--samples", "16", "--backend", "vulkan", "--strict", "--json"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err, "");

  // --strict and --device belong to --backend vulkan: a usage error with the CPU backend.
  auto usage = run_ptq({"run", example_model(), "--data", test_npy(), "--samples", "4", "--strict",
                        "-o", dir / "out4"});
  EXPECT_EQ(usage.exit_code, 2) << usage.err;
}

// A device index the loader does not have: one clear line, invalid input (exit 3), for every
// subcommand that takes --device.
TEST_F(VulkanCli, MissingDeviceIsOneLineAndExit3) {
  Scratch dir;
  const std::string cache = dir / "c.json";
  const std::vector<std::vector<std::string>> commands = {
      {"run", example_model(), "--data", test_npy(), "-o", dir / "out"},
      {"calibrate", example_model(), "--data", calib_npy(), "-o", cache},
      {"quantize", example_model(), "--data", calib_npy(), "-o", dir / "q.onnx"},
      {"eval", example_model(), "--data", test_npy(), "--labels", test_labels()},
      {"compare", example_model(), example_model(), "--data", test_npy()},
  };
  for (std::vector<std::string> args : commands) {
    args.insert(args.end(), {"--backend", "vulkan", "--device", "7"});
    auto r = run_ptq(args);
    EXPECT_EQ(r.exit_code, 3) << args[0] << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("ptq: error: vulkan: no device 7 (there are "))
        << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args[0] << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(cache));
  EXPECT_FALSE(fs::exists(dir / "q.onnx"));
}

// --device as a list: a calibration worker per listed device. Two on one device (lavapipe is
// the only one here) give the cache one gives, byte for byte; a list naming a missing device
// fails as a single missing device does; a list is for --backend vulkan.
TEST_F(VulkanCli, DeviceListCalibratesAsOneDevice) {
  Scratch dir;
  ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);  // the caches' date
  for (const std::string list : {"0", "0,0"}) {
    auto r = run_ptq({"calibrate", example_model(), "--data", calib_npy(), "--samples", "48",
                      "--batch", "8", "--backend", "vulkan", "--device", list, "-o",
                      dir / ("c" + list + ".json"), "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << list << ": " << r.err;
  }
  EXPECT_EQ(read_file(dir / "c0,0.json"), read_file(dir / "c0.json"));
  const std::string bad = dir / "bad.json";
  auto r = run_ptq({"calibrate", example_model(), "--data", calib_npy(), "--backend", "vulkan",
                    "--device", "0,7", "-o", bad});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(r.err.starts_with("ptq: error: vulkan: no device 7 (there are ")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(bad));
  r = run_ptq({"calibrate", example_model(), "--data", calib_npy(), "--device", "0,1", "-o", bad});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

}  // namespace
