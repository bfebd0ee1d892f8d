// Fusion of a Conv or Gemm with the Add / Relu / Clip after it (docs/DESIGN.md, "Fusion"): a
// fused run gives the same bytes as an unfused one (ExecutorOptions::fuse = false) on small
// graphs covering each pattern (seeded random inputs, a NaN among them) and on the ResNet-18
// and MobileNetV2 test models; a chain is not fused where an observer wants a tensor inside
// it, where such a tensor has a second reader or is a graph output, or where the kernel
// declines the shapes (a broadcast residual), and then runs node by node.
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "common/model_builder.h"
#include "common/paths.h"
#include "kernel_harness.h"
#include "npy_lite.h"
#include "ptq/onnx.h"
#include "ptq/runtime.h"

namespace ptq::runtime::testing {
namespace {

using ptq::testing::op_node;
using ptq::testing::test_data_dir;
using ptq::testing::value_info;

namespace fs = std::filesystem;
using ir::DType;

// A model with input x [shape] and the given outputs; nodes and initializers are added after.
ir::Model model(std::vector<int64_t> shape, std::vector<std::string> outputs, int64_t opset = 13) {
  ir::Model m;
  m.set_opset("", opset);
  m.graph.inputs.push_back(value_info("x", std::move(shape)));
  for (auto& o : outputs) m.graph.outputs.push_back(value_info(o, {}));
  return m;
}

// Appends `out` = Conv(in) with random weights [m, c/group, k, k] and bias, "same" padding.
void add_conv(ir::Model& m, std::mt19937& rng, const std::string& in, const std::string& out,
              int64_t c, int64_t mo, int64_t k, int64_t group = 1, int64_t stride = 1) {
  m.graph.set_initializer(out + "_w", random_tensor(rng, {mo, c / group, k, k}));
  m.graph.set_initializer(out + "_b", random_tensor(rng, {mo}));
  m.graph.nodes.push_back(
      op_node("Conv", {in, out + "_w", out + "_b"}, {out},
              {attr_ints("pads", {k / 2, k / 2, k / 2, k / 2}),
               attr_ints("strides", {stride, stride}), attr_int("group", group)}));
}

NamedTensors input(std::mt19937& rng, ir::Shape shape, bool with_nan = true) {
  ir::Tensor x = random_tensor(rng, std::move(shape));
  if (with_nan) x.data<float>()[x.size() / 3] = NAN;  // reaches outputs through every pattern
  NamedTensors in;
  in.emplace_back("x", std::move(x));
  return in;
}

struct Result {
  NamedTensors outputs;
  RunStats stats;
};

Result run(const ir::Model& m, const NamedTensors& in, bool fuse, int threads = 1,
           std::span<Observer* const> observers = {}) {
  auto backend = make_cpu_backend();
  auto exec = Executor::create(m, *backend, ExecutorOptions{threads, fuse});
  EXPECT_TRUE(exec.has_value()) << exec.status().message();
  if (!exec) return {};
  auto out = (*exec)->run(in, observers);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  if (!out) return {};
  return Result{std::move(*out), (*exec)->last_run_stats()};
}

void expect_same(const NamedTensors& a, const NamedTensors& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(bit_identical(a[i].second, b[i].second)) << a[i].first;
  }
}

// Runs fused and unfused; expects the same bytes and `fused` nodes folded into kernels.
void check(const ir::Model& m, const NamedTensors& in, int64_t fused) {
  const Result a = run(m, in, true), b = run(m, in, false);
  expect_same(a.outputs, b.outputs);
  EXPECT_EQ(a.stats.fused, fused);
  EXPECT_EQ(b.stats.fused, 0);
}

//   x -> Conv -> Relu -> y
TEST(Fusion, ConvRelu) {
  std::mt19937 rng(1);
  ir::Model m = model({1, 3, 9, 9}, {"y"});
  add_conv(m, rng, "x", "c", 3, 5, 3);
  m.graph.nodes.push_back(op_node("Relu", {"c"}, {"y"}));
  check(m, input(rng, {1, 3, 9, 9}), 1);
}

//   x -> Conv -> Clip(lo, hi initializers) -> Conv -> Clip(Constant nodes) -> y
TEST(Fusion, ConvClipWithInitializerAndConstantBounds) {
  std::mt19937 rng(2);
  ir::Model m = model({2, 4, 7, 7}, {"y"});
  add_conv(m, rng, "x", "c1", 4, 6, 1);
  m.graph.set_initializer("lo", ir::make_tensor<float>({}, {-0.25f}));
  m.graph.set_initializer("hi", ir::make_tensor<float>({}, {0.5f}));
  m.graph.nodes.push_back(op_node("Clip", {"c1", "lo", "hi"}, {"a"}));
  add_conv(m, rng, "a", "c2", 6, 6, 3, 1, 2);
  ir::Attribute v0, v6;
  v0.name = v6.name = "value";
  v0.type = v6.type = ir::AttrType::kTensor;
  v0.t = ir::make_tensor<float>({}, {0.0f});
  v6.t = ir::make_tensor<float>({}, {0.125f});
  m.graph.nodes.push_back(op_node("Constant", {}, {"k0"}, {v0}));
  m.graph.nodes.push_back(op_node("Constant", {}, {"k6"}, {v6}));
  m.graph.nodes.push_back(op_node("Clip", {"c2", "k0", "k6"}, {"y"}));
  check(m, input(rng, {2, 4, 7, 7}), 2);
}

// Opset 10: Clip's bounds are attributes; an omitted one is the float range.
TEST(Fusion, ConvClipWithAttributeBounds) {
  std::mt19937 rng(3);
  ir::Model m = model({1, 2, 6, 6}, {"y"}, 10);
  add_conv(m, rng, "x", "c1", 2, 3, 3);
  m.graph.nodes.push_back(
      op_node("Clip", {"c1"}, {"a"}, {attr_float("min", -0.1f), attr_float("max", 0.2f)}));
  add_conv(m, rng, "a", "c2", 3, 3, 3);
  m.graph.nodes.push_back(op_node("Clip", {"c2"}, {"y"}, {attr_float("max", 0.0f)}));
  check(m, input(rng, {1, 2, 6, 6}), 2);
}

//   x -> Conv a -> Conv b --+
//   x -> Conv r ------------+-> Add -> Relu -> y      (r comes after b in node order)
TEST(Fusion, ConvAddReluWithALaterResidual) {
  std::mt19937 rng(4);
  ir::Model m = model({2, 8, 10, 10}, {"y"});
  add_conv(m, rng, "x", "a", 8, 16, 3, 1, 2);
  m.graph.nodes.push_back(op_node("Relu", {"a"}, {"ar"}));
  add_conv(m, rng, "ar", "b", 16, 16, 3);
  add_conv(m, rng, "x", "r", 8, 16, 1, 1, 2);
  m.graph.nodes.push_back(op_node("Add", {"b", "r"}, {"s"}));
  m.graph.nodes.push_back(op_node("Relu", {"s"}, {"y"}));
  // Conv a + Relu, Conv b + Add + Relu (Conv r also reaches the Add; the first head keeps it).
  check(m, input(rng, {2, 8, 10, 10}), 3);
}

// The residual in the Add's first slot is the graph input; no activation.
TEST(Fusion, ConvAddWithInputResidual) {
  std::mt19937 rng(5);
  ir::Model m = model({1, 6, 5, 5}, {"y"});
  add_conv(m, rng, "x", "c", 6, 6, 3);
  m.graph.nodes.push_back(op_node("Add", {"x", "c"}, {"y"}));
  check(m, input(rng, {1, 6, 5, 5}), 1);
}

// Depthwise convs (MobileNetV2's): + Add + Clip, and strided + Relu.
TEST(Fusion, DepthwiseAddClipAndStridedRelu) {
  std::mt19937 rng(6);
  ir::Model m = model({2, 8, 11, 13}, {"y"});
  add_conv(m, rng, "x", "d1", 8, 8, 3, 8);
  m.graph.nodes.push_back(op_node("Add", {"d1", "x"}, {"s"}));
  m.graph.set_initializer("lo", ir::make_tensor<float>({}, {0.0f}));
  m.graph.set_initializer("hi", ir::make_tensor<float>({}, {0.75f}));
  m.graph.nodes.push_back(op_node("Clip", {"s", "lo", "hi"}, {"a"}));
  add_conv(m, rng, "a", "d2", 8, 8, 3, 8, 2);
  m.graph.nodes.push_back(op_node("Relu", {"d2"}, {"y"}));
  check(m, input(rng, {2, 8, 11, 13}), 3);
}

//   x [3, 8] -> Gemm -> Relu -> Gemm(transB) -> Add(r) -> Clip -> y
TEST(Fusion, GemmReluAndGemmAddClip) {
  std::mt19937 rng(7);
  ir::Model m = model({3, 8}, {"y"});
  m.graph.inputs.push_back(value_info("r", {3, 4}));
  m.graph.set_initializer("w1", random_tensor(rng, {8, 5}));
  m.graph.set_initializer("b1", random_tensor(rng, {5}));
  m.graph.set_initializer("w2", random_tensor(rng, {4, 5}));
  m.graph.nodes.push_back(op_node("Gemm", {"x", "w1", "b1"}, {"g1"}, {attr_float("alpha", 0.5f)}));
  m.graph.nodes.push_back(op_node("Relu", {"g1"}, {"a"}));
  m.graph.nodes.push_back(op_node("Gemm", {"a", "w2"}, {"g2"}, {attr_int("transB", 1)}));
  m.graph.nodes.push_back(op_node("Add", {"g2", "r"}, {"s"}));
  m.graph.set_initializer("lo", ir::make_tensor<float>({}, {-0.2f}));
  m.graph.nodes.push_back(op_node("Clip", {"s", "lo"}, {"y"}));
  NamedTensors in = input(rng, {3, 8});
  in.emplace_back("r", random_tensor(rng, {3, 4}));
  check(m, in, 3);
}

// Add(Conv, r [1, C, 1, 1]) broadcasts: the kernel declines it at run time and the nodes run
// apart, with the same result.
TEST(Fusion, BroadcastResidualRunsTheNodesApart) {
  std::mt19937 rng(8);
  ir::Model m = model({1, 4, 6, 6}, {"y"});
  add_conv(m, rng, "x", "c", 4, 4, 3);
  m.graph.set_initializer("r", random_tensor(rng, {1, 4, 1, 1}));
  m.graph.nodes.push_back(op_node("Add", {"c", "r"}, {"s"}));
  m.graph.nodes.push_back(op_node("Relu", {"s"}, {"y"}));
  check(m, input(rng, {1, 4, 6, 6}), 0);
}

// A tensor inside a chain that a second node reads, or that is a graph output, stays.
TEST(Fusion, SharedOrOutputTensorsAreNotFused) {
  std::mt19937 rng(9);
  ir::Model shared = model({1, 3, 5, 5}, {"y", "z"});
  add_conv(shared, rng, "x", "c", 3, 3, 3);
  shared.graph.nodes.push_back(op_node("Relu", {"c"}, {"y"}));
  shared.graph.nodes.push_back(op_node("Sigmoid", {"c"}, {"z"}));
  check(shared, input(rng, {1, 3, 5, 5}), 0);
  ir::Model out = model({1, 3, 5, 5}, {"c", "y"});
  add_conv(out, rng, "x", "c", 3, 3, 3);
  out.graph.nodes.push_back(op_node("Relu", {"c"}, {"y"}));
  check(out, input(rng, {1, 3, 5, 5}), 0);
}

// Keeps a copy of every wanted tensor it is shown.
class Keeper final : public Observer {
 public:
  explicit Keeper(std::vector<std::string> want) : want_(std::move(want)) {}
  std::vector<std::string> wanted(const ir::Graph&) override { return want_; }
  Status observe(const ObservedTensor& t) override {
    ir::Tensor copy(t.dtype, t.shape);
    std::memcpy(copy.raw(), t.host->raw(), copy.nbytes());
    seen[t.name] = std::move(copy);
    producers[t.name] = t.producer != nullptr ? t.producer->op_type : "";
    return Status::ok();
  }
  std::map<std::string, ir::Tensor> seen;
  std::map<std::string, std::string> producers;

 private:
  std::vector<std::string> want_;
};

//   x -> Conv a -> Relu -> Conv b -> Add(x') -> Relu -> y, with x' = Conv r(x)
ir::Model residual_block(std::mt19937& rng) {
  ir::Model m = model({1, 4, 8, 8}, {"y"});
  add_conv(m, rng, "x", "a", 4, 8, 3);
  m.graph.nodes.push_back(op_node("Relu", {"a"}, {"ar"}));
  add_conv(m, rng, "ar", "b", 8, 8, 3);
  add_conv(m, rng, "x", "r", 4, 8, 1);
  m.graph.nodes.push_back(op_node("Add", {"b", "r"}, {"s"}));
  m.graph.nodes.push_back(op_node("Relu", {"s"}, {"y"}));
  return m;
}

// An observer that wants a tensor inside a chain sees it exactly as an unfused run makes it;
// the rest still fuses where it can: wanting `b` hands the Add to Conv r's chain, wanting `s`
// leaves Conv b + Add.
TEST(Fusion, ObservedTensorsAreMadeAndShown) {
  std::mt19937 rng(10);
  const ir::Model m = residual_block(rng);
  const NamedTensors in = input(rng, {1, 4, 8, 8});
  for (const std::vector<std::string>& want :
       {std::vector<std::string>{"a", "b"}, {"s"}, {"ar", "y"}}) {
    Keeper fused_seen(want), apart_seen(want);
    Observer* f[] = {&fused_seen};
    Observer* u[] = {&apart_seen};
    const Result fused = run(m, in, true, 1, f), apart = run(m, in, false, 1, u);
    expect_same(fused.outputs, apart.outputs);
    for (const std::string& name : want) {
      ASSERT_TRUE(fused_seen.seen.count(name)) << name;
      EXPECT_TRUE(bit_identical(fused_seen.seen[name], apart_seen.seen[name])) << name;
      EXPECT_EQ(fused_seen.producers[name], apart_seen.producers[name]) << name;
    }
    // {a, b}: Conv r + Add + Relu; {s}: Conv a + Relu, Conv b + Add; {ar, y}: all three.
    const int64_t expected = want[0] == "a" ? 2 : want[0] == "s" ? 2 : 3;
    EXPECT_EQ(fused.stats.fused, expected) << want[0];
  }
}

// value_shapes() after a fused run (no observer, every chain fused) gives each value the shape
// an observer of an unfused run is shown, hidden values included; a second run with another
// batch replaces them.
TEST(Fusion, ValueShapesMatchWhatAnObserverSees) {
  std::mt19937 rng(12);
  ir::Model m = residual_block(rng);
  (*m.graph.inputs[0].type.dims)[0] = ir::Dim::symbol("N");
  const std::vector<std::string> all = {"x", "a", "ar", "b", "r", "s", "y"};
  auto backend = make_cpu_backend();
  auto exec = Executor::create(m, *backend, ExecutorOptions{1});
  ASSERT_TRUE(exec.has_value());
  for (const int64_t batch : {1, 3}) {
    const NamedTensors in = input(rng, {batch, 4, 8, 8}, false);
    ASSERT_TRUE((*exec)->run(in).has_value());
    EXPECT_EQ((*exec)->last_run_stats().fused, 3);
    const auto shapes = (*exec)->value_shapes();
    Keeper apart_seen(all);
    Observer* u[] = {&apart_seen};
    run(m, in, false, 1, u);
    ASSERT_EQ(shapes.size(), all.size());
    for (const auto& [name, shape] : shapes) {
      ASSERT_TRUE(apart_seen.seen.count(name)) << name;
      EXPECT_EQ(shape, apart_seen.seen[name].shape()) << name;
      EXPECT_EQ(shape[0], batch) << name;
    }
  }
}

// One executor alternating runs with and without an observer: each set of chains gets its own
// memory plan, and the results never change.
TEST(Fusion, AlternatingObserversKeepResults) {
  std::mt19937 rng(11);
  const ir::Model m = residual_block(rng);
  const NamedTensors in = input(rng, {1, 4, 8, 8}, false);
  auto backend = make_cpu_backend();
  auto exec = Executor::create(m, *backend, ExecutorOptions{2});
  ASSERT_TRUE(exec.has_value());
  Keeper keeper({"s"});
  Observer* obs[] = {&keeper};
  const Result ref = run(m, in, false);
  for (int i = 0; i < 6; ++i) {
    auto out = i % 3 == 1 ? (*exec)->run(in, obs) : (*exec)->run(in);
    ASSERT_TRUE(out.has_value()) << out.status().message();
    expect_same(*out, ref.outputs);
    EXPECT_EQ((*exec)->last_run_stats().fused, i % 3 == 1 ? 2 : 3) << i;
  }
}

TEST(Fusion, ResultsDoNotDependOnThreads) {
  std::mt19937 rng(12);
  const ir::Model m = residual_block(rng);
  const NamedTensors in = input(rng, {1, 4, 8, 8});
  const Result one = run(m, in, true, 1), three = run(m, in, true, 3);
  expect_same(one.outputs, three.outputs);
}

// ---- the test models ------------------------------------------------------------------------

// The inputs of every Conv, Gemm and Add: what calibration asks for (quantized ops' inputs).
std::vector<std::string> calibration_like(const ir::Graph& g) {
  std::vector<std::string> want;
  for (const ir::Node& n : g.nodes) {
    if (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "Add")
      want.push_back(n.inputs[0]);
    if (n.op_type == "Add") want.push_back(n.inputs[1]);
  }
  return want;
}

// Fused runs of a test model on seeded random input, without observers and with a
// calibration-like one, give the same bytes (outputs and observed tensors) as an unfused run.
void check_model(const std::string& name, int64_t fused) {
  const fs::path path = test_data_dir() / "models" / (name + ".onnx");
  ASSERT_TRUE(fs::exists(path)) << path << " is missing: run scripts/make-testdata.sh";
  auto m = onnx::load_model(path);
  ASSERT_TRUE(m.has_value()) << m.status().message();
  std::mt19937 rng(13);
  NamedTensors in;
  in.emplace_back(m->graph.real_inputs().at(0)->name, random_tensor(rng, {1, 3, 224, 224}, -2, 2));
  Keeper fk(calibration_like(m->graph)), uk(calibration_like(m->graph));
  Observer* f[] = {&fk};
  Observer* u[] = {&uk};
  const Result apart = run(*m, in, false, 2, u);
  const Result plain = run(*m, in, true, 2), observed = run(*m, in, true, 2, f);
  expect_same(plain.outputs, apart.outputs);
  expect_same(observed.outputs, apart.outputs);
  EXPECT_EQ(plain.stats.fused, fused);
  EXPECT_LT(plain.stats.peak_live_bytes, apart.stats.peak_live_bytes);
  EXPECT_GT(observed.stats.fused, 0);
  ASSERT_EQ(fk.seen.size(), uk.seen.size());
  for (const auto& [t, tensor] : uk.seen) EXPECT_TRUE(bit_identical(fk.seen[t], tensor)) << t;
}

// 17 Conv + Relu, 8 of them through the block's Add: 17 + 8 nodes folded.
TEST(FusionModels, ResNet18FusedEqualsUnfused) { check_model("resnet18", 25); }
// 35 Conv + Clip, 10 Conv + Add.
TEST(FusionModels, MobileNetV2FusedEqualsUnfused) { check_model("mobilenet_v2", 45); }

}  // namespace
}  // namespace ptq::runtime::testing
