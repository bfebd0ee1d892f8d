// Calibration sees the same tensors with and without the executor's graph optimizer
// (runtime::ExecutorOptions::optimize, docs/DESIGN.md "Optimizer"): the caches are
// byte-identical on the test models and on a model built here whose LayerNorm, Gelu and SiLU
// the optimizer rewrites, and whose constant subgraph it folds, where nothing observes them.
#include <gtest/gtest.h>

#include <filesystem>

#include "calib_test_util.h"
#include "common/paths.h"
#include "ptq/calibration.h"
#include "ptq/ir/builders.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

using ptq::testing::output_node;

namespace fs = std::filesystem;
using testing::TempDir;

// A transformer-like block in primitive ops (opset 13):
//
//   x [N,8,32] ─► LayerNorm (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add) ─► ln
//   ln ─► MatMul(W1 = Mul(W1raw, 0.5): folded) ─► h ─► Gelu (Div/Erf/Add/Mul/Mul) ─► g
//   g ─► SiLU (Sigmoid/Mul) ─► s ─► MatMul(W2) ─► y
ir::Model block_model() {
  ir::Model m;
  m.set_opset("", 13);
  ir::Graph& g = m.graph;
  const std::vector<ir::Dim> act{ir::Dim::symbol("N"), ir::Dim::of(8), ir::Dim::of(32)};
  g.inputs.push_back({"x", {ir::DType::kFloat32, act, {}}, {}});
  g.outputs.push_back({"y", {ir::DType::kFloat32, act, {}}, {}});
  auto scalar = [&](const std::string& name, float v) {
    g.set_initializer(name, ir::make_tensor<float>({}, {v}));
    return name;
  };
  g.set_initializer("gamma", testing::random_tensor({32}, 3, 0.2));
  g.set_initializer("beta", testing::random_tensor({32}, 4, 0.2));
  g.set_initializer("W1raw", testing::random_tensor({32, 32}, 5, 0.4));
  g.set_initializer("W2", testing::random_tensor({32, 32}, 6, 0.2));
  const ir::Attribute axes = ir::ints_attr("axes", {-1});
  g.nodes = {
      output_node("ReduceMean", {"x"}, {"mean"}, {axes}),
      output_node("Sub", {"x", "mean"}, {"d"}),
      output_node("Pow", {"d", scalar("two", 2.0f)}, {"p"}),
      output_node("ReduceMean", {"p"}, {"var"}, {axes}),
      output_node("Add", {"var", scalar("eps", 1e-5f)}, {"ve"}),
      output_node("Sqrt", {"ve"}, {"sd"}),
      output_node("Div", {"d", "sd"}, {"n"}),
      output_node("Mul", {"n", "gamma"}, {"sc"}),
      output_node("Add", {"sc", "beta"}, {"ln"}),
      output_node("Mul", {"W1raw", scalar("half", 0.5f)}, {"W1"}),
      output_node("MatMul", {"ln", "W1"}, {"h"}),
      output_node("Div", {"h", scalar("sqrt2", 1.4142135f)}, {"t"}),
      output_node("Erf", {"t"}, {"e"}),
      output_node("Add", {"e", scalar("one", 1.0f)}, {"a"}),
      output_node("Mul", {"h", "a"}, {"ha"}),
      output_node("Mul", {"ha", "half"}, {"gelu"}),
      output_node("Sigmoid", {"gelu"}, {"sg"}),
      output_node("Mul", {"gelu", "sg"}, {"s"}),
      output_node("MatMul", {"s", "W2"}, {"y"}),
  };
  return m;
}

struct Calibrated {
  std::string json;
  runtime::RunStats stats;  // of the last batch
};

Calibrated calibrate_with(const ir::Model& model, const std::string& samples, bool optimize,
                          bool all_tensors) {
  auto backend = runtime::make_cpu_backend();
  runtime::ExecutorOptions eo;
  eo.threads = 2;
  eo.optimize = optimize;
  auto exec = runtime::Executor::create(model, *backend, eo);
  EXPECT_TRUE(exec.has_value()) << exec.status().message();
  if (!exec) return {};
  data::DatasetSpec spec;
  spec.sources.push_back({"", samples});
  spec.batch = 4;
  auto ds = data::Dataset::open(spec);
  EXPECT_TRUE(ds.has_value()) << ds.status().message();
  if (!ds) return {};
  EXPECT_TRUE(ds->bind(model.graph).is_ok());
  CalibrationOptions o;
  o.method.name = "entropy";
  o.all_tensors = all_tensors;
  o.date = "2026-01-01T00:00:00Z";
  auto table = calibrate(model, **exec, *ds, o);
  EXPECT_TRUE(table.has_value()) << table.status().message();
  if (!table) return {};
  return Calibrated{calib::json_cache_string(*table), (*exec)->last_run_stats()};
}

// Both caches, every tensor or the planner's; returns the optimized runs' statistics.
std::vector<runtime::RunStats> expect_same_caches(const ir::Model& model,
                                                  const std::string& samples,
                                                  std::vector<bool> modes) {
  std::vector<runtime::RunStats> stats;
  for (bool all : modes) {
    SCOPED_TRACE(all ? "all tensors" : "quantizable tensors");
    const Calibrated a = calibrate_with(model, samples, true, all);
    const Calibrated b = calibrate_with(model, samples, false, all);
    EXPECT_FALSE(a.json.empty());
    EXPECT_TRUE(a.json == b.json);
    EXPECT_EQ(b.stats.rewritten + b.stats.folded, 0);
    stats.push_back(a.stats);
  }
  return stats;
}

// The folded weight and the SiLU (its Sigmoid is not observed by the planner's set; it keeps
// the float operations) are used while calibrating; LayerNorm and Gelu, whose outputs feed
// observed tensors and would round otherwise, are not.
TEST(OptimizerCaches, BuiltBlockIsByteIdentical) {
  TempDir dir;
  const ir::Model m = testing::save_and_load(block_model(), dir / "block.onnx");
  const std::string samples = dir / "x.npy";
  ASSERT_TRUE(data::save_npy(samples, testing::random_tensor({12, 8, 32}, 7, 1.5)).is_ok());
  const std::vector<runtime::RunStats> s = expect_same_caches(m, samples, {false, true});
  EXPECT_EQ(s[0].folded, 1);
  EXPECT_EQ(s[0].rewritten, 2);
  EXPECT_EQ(s[1].folded, 1);
  EXPECT_EQ(s[1].rewritten, 0);
}

void check_model(const std::string& name, std::vector<bool> modes) {
  const fs::path path = ptq::testing::test_models_dir() / (name + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << ": run scripts/make-testdata.sh";
  auto m = onnx::load_model(path);
  ASSERT_TRUE(m.has_value()) << m.status().message();
  expect_same_caches(*m, (ptq::testing::test_models_dir() / (name + ".samples.npy")).string(),
                     std::move(modes));
}

TEST(OptimizerCaches, ResNet18IsByteIdentical) { check_model("resnet18", {false}); }
TEST(OptimizerCaches, MobileNetV2IsByteIdentical) { check_model("mobilenet_v2", {false}); }
TEST(OptimizerCaches, TransformerIsByteIdentical) { check_model("transformer", {false, true}); }

}  // namespace
}  // namespace ptq::calibration
