// Every Vulkan kernel against the CPU reference kernels, on random shapes with fixed seeds.
// Tolerance: max |gpu - cpu| / max |cpu| (floor 1e-3). 1e-5 for exact data movement and
// elementwise ops, 1e-4 where a reduction order differs (GEMM, conv, pooling, softmax, norms)
// and for transcendental functions, whose Vulkan precision is a few ulps.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "vulkan_harness.h"

namespace ptq::vulkan::testing {
namespace {

constexpr double kExact = 1e-6;
constexpr double kSum = 1e-4;

// Output 0 of `model` run on its input `name` = `in`, on Vulkan with `options` and on the CPU
// executor (empty after a reported failure).
struct Outputs {
  ir::Tensor gpu, cpu;
};
Outputs run_both(const ir::Model& model, const std::string& name, const ir::Tensor& in,
                 const VulkanOptions& options) {
  Outputs o;
  auto cpu_backend = runtime::make_cpu_backend();
  auto cpu = runtime::Executor::create(model, *cpu_backend);
  auto gpu = make_vulkan_executor(model, options);
  if (!cpu.has_value() || !gpu.has_value()) {
    ADD_FAILURE() << (cpu.has_value() ? gpu.status() : cpu.status()).message();
    return o;
  }
  auto want = (*cpu)->run({{name, in.view()}});
  auto got = (*gpu)->run({{name, in.view()}});
  if (!want.has_value() || !got.has_value()) {
    ADD_FAILURE() << (want.has_value() ? got.status() : want.status()).message();
    return o;
  }
  o.cpu = std::move((*want)[0].second);
  o.gpu = std::move((*got)[0].second);
  return o;
}

TEST(VulkanOps, BinaryBroadcasting) {
  std::vector<Case> cases;
  std::mt19937 rng(1);
  const std::vector<std::pair<ir::Shape, ir::Shape>> shapes = {
      {{3, 5, 7}, {3, 5, 7}}, {{2, 8, 6, 5}, {1, 8, 1, 1}}, {{4, 1, 6}, {5, 1}},
      {{7}, {2, 3, 7}},       {{2, 1, 3, 1, 4, 1, 2}, {3, 1, 4, 5, 1}}, {{6, 4}, {}}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"}) {
    for (const auto& [sa, sb] : shapes) {
      OneNode spec;
      spec.op = op;
      const bool pow = std::string(op) == "Pow";
      spec.feeds = {{"a", random_tensor(rng, sa, pow ? 0.1f : -2.0f, 2.0f)},
                    {"b", random_tensor(rng, sb, pow ? -2.0f : 0.5f, 2.0f)}};
      spec.inputs = {"a", "b"};
      cases.push_back({spec, pow ? kSum : kExact,
                       fmt::format("{} {} {}", op, ir::shape_str(sa), ir::shape_str(sb))});
    }
  }
  check_cases(cases);
}

TEST(VulkanOps, VariadicAndPRelu) {
  std::vector<Case> cases;
  std::mt19937 rng(2);
  for (const char* op : {"Sum", "Mean", "Max", "Min"}) {
    OneNode spec;
    spec.op = op;
    spec.feeds = {{"a", random_tensor(rng, {2, 3, 4})}, {"b", random_tensor(rng, {3, 1})},
                  {"c", random_tensor(rng, {4})}};
    spec.inputs = {"a", "b", "c"};
    cases.push_back({spec, kExact, op});
  }
  OneNode prelu;
  prelu.op = "PRelu";
  prelu.feeds = {{"x", random_tensor(rng, {2, 5, 3, 3})}};
  prelu.constants = {{"slope", random_tensor(rng, {5, 1, 1}, 0.0f, 0.5f)}};
  prelu.inputs = {"x", "slope"};
  cases.push_back({prelu, kExact, "PRelu"});
  check_cases(cases);
}

TEST(VulkanOps, Activations) {
  std::vector<Case> cases;
  std::mt19937 rng(3);
  struct Act {
    const char* op;
    std::vector<ir::Attribute> attrs;
    float lo, hi;
    double tol;
  };
  const std::vector<Act> acts = {
      {"Relu", {}, -3, 3, kExact},
      {"Sigmoid", {}, -8, 8, kSum},
      {"Tanh", {}, -5, 5, kSum},
      {"Exp", {}, -4, 4, kSum},
      {"Log", {}, 0.01f, 10, kSum},
      {"Sqrt", {}, 0, 10, kSum},
      {"Abs", {}, -3, 3, kExact},
      {"Neg", {}, -3, 3, kExact},
      {"Erf", {}, -3, 3, kSum},
      {"LeakyRelu", {attr_float("alpha", 0.1f)}, -3, 3, kExact},
      {"Elu", {attr_float("alpha", 0.7f)}, -3, 3, kSum},
      {"HardSigmoid", {}, -5, 5, kExact},
      {"HardSwish", {}, -5, 5, kExact},
      {"Softplus", {}, -5, 25, kSum},
      {"Reciprocal", {}, 0.5f, 3, kExact},
      {"Floor", {}, -3, 3, kExact},
      {"Ceil", {}, -3, 3, kExact},
      {"Round", {}, -3, 3, kExact},
      {"Sin", {}, -3, 3, kSum},
      {"Cos", {}, -3, 3, kSum},
      {"Selu", {}, -3, 3, kSum},
      {"Softsign", {}, -3, 3, kExact},
      {"Sign", {}, -3, 3, kExact},
      {"Mish", {}, -4, 4, kSum},
      {"Celu", {attr_float("alpha", 1.5f)}, -3, 3, kSum},
      {"ThresholdedRelu", {attr_float("alpha", 0.5f)}, -3, 3, kExact},
  };
  for (const Act& c : acts) {
    OneNode spec;
    spec.op = c.op;
    spec.attrs = c.attrs;
    spec.feeds = {{"x", random_tensor(rng, {3, 7, 11}, c.lo, c.hi)}};
    spec.inputs = {"x"};
    cases.push_back({spec, c.tol, c.op});
  }
  check_cases(cases);
}

TEST(VulkanOps, ClipAndGelu) {
  std::vector<Case> cases;
  std::mt19937 rng(4);
  OneNode clip;
  clip.op = "Clip";
  clip.feeds = {{"x", random_tensor(rng, {4, 33}, -10, 10)}};
  clip.constants = {{"lo", ir::make_tensor<float>({}, {0.0f})},
                    {"hi", ir::make_tensor<float>({}, {6.0f})}};
  clip.inputs = {"x", "lo", "hi"};
  cases.push_back({clip, kExact, "Clip"});
  clip.inputs = {"x", "", "hi"};
  cases.push_back({clip, kExact, "Clip max only"});
  OneNode gelu;
  gelu.op = "Gelu";
  gelu.opset = 20;
  gelu.feeds = {{"x", random_tensor(rng, {5, 40}, -4, 4)}};
  gelu.inputs = {"x"};
  cases.push_back({gelu, kSum, "Gelu"});
  gelu.attrs = {attr_string("approximate", "tanh")};
  cases.push_back({gelu, kSum, "Gelu tanh"});
  check_cases(cases);
}

TEST(VulkanOps, GemmAndMatMul) {
  std::vector<Case> cases;
  std::mt19937 rng(5);
  struct G {
    int64_t m, k, n;
    bool ta, tb;
    ir::Shape bias;
  };
  for (const G& g : std::vector<G>{{5, 7, 3, false, false, {3}},
                                   {70, 33, 65, false, true, {1, 65}},
                                   {130, 40, 150, true, false, {130, 1}},
                                   {129, 200, 131, true, true, {129, 131}},
                                   {16, 16, 16, false, false, {}},
                                   {4, 9, 6, false, false, {1}}}) {
    OneNode spec;
    spec.op = "Gemm";
    spec.attrs = {attr_int("transA", g.ta), attr_int("transB", g.tb), attr_float("alpha", 0.5f),
                  attr_float("beta", 2.0f)};
    spec.feeds = {{"a", random_tensor(rng, g.ta ? ir::Shape{g.k, g.m} : ir::Shape{g.m, g.k})}};
    spec.constants = {{"b", random_tensor(rng, g.tb ? ir::Shape{g.n, g.k} : ir::Shape{g.k, g.n})}};
    spec.inputs = {"a", "b"};
    if (!g.bias.empty()) {
      spec.constants.emplace_back("c", random_tensor(rng, g.bias));
      spec.inputs.push_back("c");
    }
    cases.push_back(
        {spec, kSum, fmt::format("Gemm {}x{}x{} tA{} tB{}", g.m, g.k, g.n, g.ta, g.tb)});
  }
  const std::vector<std::pair<ir::Shape, ir::Shape>> mm = {
      {{3, 4}, {4, 5}},          {{2, 3, 17, 9}, {2, 3, 9, 13}}, {{4, 16, 64}, {64, 130}},
      {{2, 1, 5, 6}, {3, 6, 7}}, {{8}, {8, 3}},                   {{2, 5, 8}, {8}},
      {{1, 200, 72}, {72, 140}},
      // gemm.comp's larger tiles (lavapipe gets them from 4 blocks): 128x128 with vec4 and
      // with scalar loads, 64x128.
      {{2, 128, 64}, {64, 256}}, {{4, 130, 33}, {4, 33, 131}}, {{4, 64, 20}, {4, 20, 128}}};
  for (const auto& [sa, sb] : mm) {
    OneNode spec;
    spec.op = "MatMul";
    spec.feeds = {{"a", random_tensor(rng, sa)}, {"b", random_tensor(rng, sb)}};
    spec.inputs = {"a", "b"};
    cases.push_back(
        {spec, kSum, fmt::format("MatMul {} {}", ir::shape_str(sa), ir::shape_str(sb))});
  }
  check_cases(cases);
}

TEST(VulkanOps, Conv) {
  std::vector<Case> cases;
  std::mt19937 rng(6);
  struct C {
    int64_t n, ic, h, w, oc, k, stride, pad, dil, group;
  };
  for (const C& c : std::vector<C>{{2, 3, 17, 15, 16, 3, 1, 1, 1, 1},   // implicit GEMM
                                   {1, 16, 9, 9, 32, 1, 1, 0, 1, 1},    // 1x1 as GEMM
                                   {2, 8, 12, 10, 12, 3, 2, 1, 1, 1},   // strided
                                   {1, 8, 11, 11, 8, 3, 1, 2, 2, 1},    // dilated
                                   {2, 16, 10, 10, 16, 3, 1, 1, 1, 16}, // depthwise
                                   {1, 12, 9, 8, 18, 3, 2, 0, 1, 3},    // grouped (direct)
                                   {1, 64, 8, 8, 64, 3, 1, 1, 1, 2},    // grouped (implicit)
                                   {1, 3, 40, 40, 130, 7, 2, 3, 1, 1},     // 130 channels
                                   {1, 8, 16, 16, 130, 3, 1, 1, 1, 1},     // 128x128 tiles
                                   {4, 3, 25, 21, 64, 7, 2, 3, 1, 1}}) {  // 64x128 tiles, odd P
    OneNode spec;
    spec.op = "Conv";
    spec.attrs = {attr_ints("kernel_shape", {c.k, c.k}), attr_ints("strides", {c.stride, c.stride}),
                  attr_ints("pads", {c.pad, c.pad, c.pad, c.pad}),
                  attr_ints("dilations", {c.dil, c.dil}), attr_int("group", c.group)};
    spec.feeds = {{"x", random_tensor(rng, {c.n, c.ic, c.h, c.w})}};
    spec.constants = {{"w", random_tensor(rng, {c.oc, c.ic / c.group, c.k, c.k})},
                      {"b", random_tensor(rng, {c.oc})}};
    spec.inputs = {"x", "w", "b"};
    cases.push_back({spec, kSum, fmt::format("Conv ic{} oc{} k{} s{} p{} d{} g{}", c.ic, c.oc, c.k,
                                              c.stride, c.pad, c.dil, c.group)});
  }
  // No bias, asymmetric SAME_UPPER padding, 1-D.
  OneNode same;
  same.op = "Conv";
  same.attrs = {attr_ints("kernel_shape", {4, 2}), attr_string("auto_pad", "SAME_UPPER"),
                attr_ints("strides", {2, 1})};
  same.feeds = {{"x", random_tensor(rng, {1, 20, 9, 7})}};
  same.constants = {{"w", random_tensor(rng, {24, 20, 4, 2})}};
  same.inputs = {"x", "w"};
  cases.push_back({same, kSum, "Conv SAME_UPPER"});
  OneNode one_d;
  one_d.op = "Conv";
  one_d.attrs = {attr_ints("kernel_shape", {5}), attr_ints("pads", {2, 2})};
  one_d.feeds = {{"x", random_tensor(rng, {2, 16, 30})}};
  one_d.constants = {{"w", random_tensor(rng, {20, 16, 5})}};
  one_d.inputs = {"x", "w"};
  cases.push_back({one_d, kSum, "Conv 1-D"});
  check_cases(cases);
}

// Split-K (VulkanOptions::conv_split_k): each K slice's partial sums, then their sum with bias
// and activation. K = 576 (2 slices), 1152 (3), 603 (2 slices of 304 and 299: K not a
// multiple of the tile step), grouped, odd output planes (scalar stores), no bias.
TEST(VulkanOps, ConvSplitK) {
  std::vector<Case> cases;
  std::mt19937 rng(16);
  struct C {
    int64_t n, ic, hw, oc, stride, group;
    bool bias;
  };
  for (const C& c : std::vector<C>{{2, 64, 10, 40, 1, 1, true},
                                   {1, 128, 8, 130, 1, 1, true},
                                   {2, 67, 9, 24, 2, 1, false},
                                   {1, 128, 7, 64, 1, 2, true}}) {
    OneNode spec;
    spec.op = "Conv";
    spec.attrs = {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {c.stride, c.stride}),
                  attr_ints("pads", {1, 1, 1, 1}), attr_int("group", c.group)};
    spec.feeds = {{"x", random_tensor(rng, {c.n, c.ic, c.hw, c.hw})}};
    spec.constants = {{"w", random_tensor(rng, {c.oc, c.ic / c.group, 3, 3})}};
    spec.inputs = {"x", "w"};
    if (c.bias) {
      spec.constants.emplace_back("b", random_tensor(rng, {c.oc}));
      spec.inputs.push_back("b");
    }
    cases.push_back(
        {spec, kSum, fmt::format("split-K Conv ic{} oc{} s{} g{}", c.ic, c.oc, c.stride, c.group)});
  }
  VulkanOptions options = strict_options();
  options.conv_split_k = 3;
  check_cases(cases, options);
}

// Add + Relu and Sub + Clip (ResNet's residual pattern) fold into one binary pass, broadcast
// included; Mean + Relu is not folded (its scale comes after the sum) and still applies the Relu.
TEST(VulkanOps, BinaryWithFoldedActivation) {
  std::mt19937 rng(18);
  for (const char* op : {"Add", "Sub", "Mean"}) {
    for (const char* act : {"Relu", "Clip"}) {
      ir::Model model;
      model.set_opset("", 17);
      ir::Node bin = ir::make_node(op, "bin", {"a", "b"}, {"s"});
      ir::Node activation = ir::make_node(act, "act", {"s"}, {"y"});
      if (std::string(act) == "Clip") activation.inputs = {"s", "lo", "hi"};
      model.graph.nodes = {bin, activation};
      ir::ValueInfo a;
      a.name = "a";
      a.type.dtype = ir::DType::kFloat32;
      ir::ValueInfo y;
      y.name = "y";
      model.graph.inputs = {a};
      model.graph.outputs = {y};
      model.graph.set_initializer("b", random_tensor(rng, {1, 8, 1, 1}));  // broadcast
      model.graph.set_initializer("lo", ir::make_tensor<float>({}, {-0.25f}));
      model.graph.set_initializer("hi", ir::make_tensor<float>({}, {0.5f}));
      const Outputs o = run_both(model, "a", random_tensor(rng, {2, 8, 5, 7}), strict_options());
      ASSERT_FALSE(o.gpu.empty());
      const std::string what = fmt::format("{} + {}", op, act);
      expect_close(o.gpu, o.cpu, kSum, what);
      int64_t clamped = 0;
      for (float v : o.gpu.span<const float>()) {
        clamped += v <= 0.0f || v == 0.5f ? 1 : 0;
      }
      EXPECT_GT(clamped, 0) << what << ": the activation was not applied";
    }
  }
}

// A model of `nodes` from the float input "x" to the output "y".
ir::Model x_to_y(std::vector<ir::Node> nodes) {
  ir::Model model;
  model.set_opset("", 17);
  model.graph.nodes = std::move(nodes);
  ir::ValueInfo x;
  x.name = "x";
  x.type.dtype = ir::DType::kFloat32;
  model.graph.inputs = {x};
  ir::ValueInfo y;
  y.name = "y";
  model.graph.outputs = {y};
  return model;
}

// A 3x3 convolution with pads 1.
ir::Node conv3x3(std::vector<std::string> inputs, const std::string& output) {
  ir::Node conv = ir::make_node("Conv", "conv", std::move(inputs), {output});
  conv.attributes = {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})};
  return conv;
}

// A Relu folded into a split-K convolution is applied after the slices are summed.
TEST(VulkanOps, ConvSplitKWithRelu) {
  std::mt19937 rng(17);
  ir::Model model =
      x_to_y({conv3x3({"x", "w", "b"}, "c"), ir::make_node("Relu", "relu", {"c"}, {"y"})});
  model.graph.set_initializer("w", random_tensor(rng, {32, 96, 3, 3}));
  model.graph.set_initializer("b", random_tensor(rng, {32}));
  VulkanOptions options = strict_options();
  options.conv_split_k = 2;
  const Outputs o = run_both(model, "x", random_tensor(rng, {2, 96, 6, 6}), options);
  ASSERT_FALSE(o.gpu.empty());
  expect_close(o.gpu, o.cpu, kSum, "split-K Conv + Relu");
  int64_t zeros = 0;
  for (float v : o.gpu.span<const float>()) zeros += v == 0.0f ? 1 : 0;
  EXPECT_GT(zeros, 0) << "the Relu was not applied";
}

// Inputs staged in host-visible device memory or in host memory (VulkanOptions::input_staging)
// reach the GPU with the same bytes: both give what the CPU gives, and the same as each other.
TEST(VulkanOps, InputStagingEitherWay) {
  std::mt19937 rng(19);
  ir::Model model = x_to_y({conv3x3({"x", "w"}, "y")});
  model.graph.set_initializer("w", random_tensor(rng, {16, 8, 3, 3}));
  const ir::Tensor in = random_tensor(rng, {2, 8, 9, 11});
  VulkanOptions options = strict_options();
  options.input_staging = VulkanOptions::InputStaging::kDevice;
  const Outputs device = run_both(model, "x", in, options);
  options.input_staging = VulkanOptions::InputStaging::kHost;
  const Outputs host = run_both(model, "x", in, options);
  ASSERT_FALSE(device.gpu.empty());
  ASSERT_FALSE(host.gpu.empty());
  expect_close(device.gpu, device.cpu, kSum, "inputs in device memory");
  expect_close(host.gpu, host.cpu, kSum, "inputs in host memory");
  EXPECT_TRUE(std::equal(device.gpu.span<const float>().begin(),
                         device.gpu.span<const float>().end(),
                         host.gpu.span<const float>().begin()));
}

TEST(VulkanOps, ConvTranspose) {
  std::vector<Case> cases;
  std::mt19937 rng(7);
  OneNode spec;
  spec.op = "ConvTranspose";
  spec.attrs = {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}),
                attr_ints("pads", {1, 1, 1, 1}), attr_ints("output_padding", {1, 1})};
  spec.feeds = {{"x", random_tensor(rng, {2, 6, 5, 4})}};
  spec.constants = {{"w", random_tensor(rng, {6, 4, 3, 3})}, {"b", random_tensor(rng, {4})}};
  spec.inputs = {"x", "w", "b"};
  cases.push_back({spec, kSum, "ConvTranspose"});
  spec.attrs = {attr_ints("kernel_shape", {2, 3}), attr_int("group", 2),
                attr_ints("dilations", {2, 1})};
  spec.constants = {{"w", random_tensor(rng, {6, 3, 2, 3})}};
  spec.inputs = {"x", "w"};
  cases.push_back({spec, kSum, "ConvTranspose grouped dilated"});
  check_cases(cases);
}

TEST(VulkanOps, BatchNormalization) {
  std::vector<Case> cases;
  std::mt19937 rng(8);
  OneNode spec;
  spec.op = "BatchNormalization";
  spec.feeds = {{"x", random_tensor(rng, {3, 6, 5, 4})}};
  spec.constants = {{"s", random_tensor(rng, {6})}, {"b", random_tensor(rng, {6})},
                    {"m", random_tensor(rng, {6})}, {"v", random_tensor(rng, {6}, 0.1f, 2.0f)}};
  spec.inputs = {"x", "s", "b", "m", "v"};
  cases.push_back({spec, kSum, "BatchNormalization"});
  check_cases(cases);
}

TEST(VulkanOps, Pooling) {
  std::vector<Case> cases;
  std::mt19937 rng(9);
  struct P {
    const char* op;
    int64_t k, s, pad, dil;
    int64_t ceil, include_pad;
  };
  for (const P& p : std::vector<P>{{"MaxPool", 3, 2, 1, 1, 0, 0},
                                   {"MaxPool", 2, 2, 0, 1, 1, 0},
                                   {"MaxPool", 3, 1, 1, 2, 0, 0},
                                   {"AveragePool", 3, 2, 1, 1, 0, 0},
                                   {"AveragePool", 3, 2, 1, 1, 0, 1},
                                   {"AveragePool", 2, 2, 0, 1, 1, 0}}) {
    OneNode spec;
    spec.op = p.op;
    spec.attrs = {attr_ints("kernel_shape", {p.k, p.k}), attr_ints("strides", {p.s, p.s}),
                  attr_ints("pads", {p.pad, p.pad, p.pad, p.pad}), attr_int("ceil_mode", p.ceil)};
    if (std::string(p.op) == "MaxPool")
      spec.attrs.push_back(attr_ints("dilations", {p.dil, p.dil}));
    else spec.attrs.push_back(attr_int("count_include_pad", p.include_pad));
    spec.feeds = {{"x", random_tensor(rng, {2, 3, 13, 11})}};
    spec.inputs = {"x"};
    cases.push_back({spec, kSum, fmt::format("{} k{} s{} p{} d{} ceil{} incl{}", p.op, p.k, p.s,
                                              p.pad, p.dil, p.ceil, p.include_pad)});
  }
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    OneNode spec;
    spec.op = op;
    spec.feeds = {{"x", random_tensor(rng, {3, 5, 9, 7})}};
    spec.inputs = {"x"};
    cases.push_back({spec, kSum, op});
  }
  check_cases(cases);
}

TEST(VulkanOps, Reductions) {
  std::vector<Case> cases;
  std::mt19937 rng(10);
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> axes = {
      {{1}, 1}, {{-1}, 0}, {{2, 3}, 1}, {{0}, 0}, {{}, 1}};
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                         "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp"}) {
    for (const auto& [ax, keep] : axes) {
      OneNode spec;
      spec.op = op;
      spec.opset = 13;
      spec.attrs = {attr_int("keepdims", keep)};
      const bool sum_input = std::string(op) == "ReduceSum";
      if (!ax.empty() && !sum_input) spec.attrs.push_back(attr_ints("axes", ax));
      const float lo = std::string(op) == "ReduceProd" ? 0.8f : -1.0f;
      spec.feeds = {{"x", random_tensor(rng, {3, 4, 5, 6}, lo, 1.2f)}};
      spec.inputs = {"x"};
      if (sum_input && !ax.empty()) {
        spec.constants = {{"axes", int64_tensor({static_cast<int64_t>(ax.size())}, ax)}};
        spec.inputs.push_back("axes");
      }
      cases.push_back(
          {spec, kSum, fmt::format("{} axes [{}] keepdims {}", op, fmt::join(ax, ","), keep)});
    }
  }
  check_cases(cases);
}

TEST(VulkanOps, SoftmaxAndLayerNorm) {
  std::vector<Case> cases;
  std::mt19937 rng(11);
  for (int64_t axis : {-1, 1, 0}) {
    for (const char* op : {"Softmax", "LogSoftmax"}) {
      OneNode spec;
      spec.op = op;
      spec.attrs = {attr_int("axis", axis)};
      spec.feeds = {{"x", random_tensor(rng, {4, 6, 300}, -5, 5)}};
      spec.inputs = {"x"};
      cases.push_back({spec, kSum, fmt::format("{} axis {}", op, axis)});
      spec.opset = 11;  // the old 2-D coercion
      cases.push_back({spec, kSum, fmt::format("{} opset 11 axis {}", op, axis)});
    }
  }
  for (int64_t axis : {-1, -2}) {
    OneNode ln;
    ln.op = "LayerNormalization";
    ln.attrs = {attr_int("axis", axis), attr_float("epsilon", 1e-5f)};
    ln.feeds = {{"x", random_tensor(rng, {3, 10, 64}, -2, 3)}};
    const ir::Shape norm = axis == -1 ? ir::Shape{64} : ir::Shape{10, 64};
    ln.constants = {{"s", random_tensor(rng, norm)}, {"b", random_tensor(rng, norm)}};
    ln.inputs = {"x", "s", "b"};
    cases.push_back({ln, kSum, fmt::format("LayerNormalization axis {}", axis)});
  }
  check_cases(cases);
}

TEST(VulkanOps, DataMovement) {
  std::vector<Case> cases;
  std::mt19937 rng(12);
  OneNode tr;
  tr.op = "Transpose";
  tr.attrs = {attr_ints("perm", {0, 2, 3, 1})};
  tr.feeds = {{"x", random_tensor(rng, {2, 3, 4, 5})}};
  tr.inputs = {"x"};
  cases.push_back({tr, kExact, "Transpose"});

  OneNode cc;
  cc.op = "Concat";
  cc.attrs = {attr_int("axis", 1)};
  cc.feeds = {{"a", random_tensor(rng, {2, 3, 4})}, {"b", random_tensor(rng, {2, 5, 4})}};
  cc.constants = {{"c", random_tensor(rng, {2, 1, 4})}};
  cc.inputs = {"a", "b", "c"};
  cases.push_back({cc, kExact, "Concat"});

  OneNode sp;
  sp.op = "Split";
  sp.opset = 13;
  sp.attrs = {attr_int("axis", 2)};
  sp.outputs = 3;
  sp.feeds = {{"x", random_tensor(rng, {2, 3, 10})}};
  sp.constants = {{"split", int64_tensor({3}, {2, 5, 3})}};
  sp.inputs = {"x", "split"};
  cases.push_back({sp, kExact, "Split"});

  OneNode sl;
  sl.op = "Slice";
  sl.feeds = {{"x", random_tensor(rng, {6, 7, 8})}};
  sl.constants = {{"starts", int64_tensor({3}, {1, -1, 0})},
                  {"ends", int64_tensor({3}, {5, -100, 8})},
                  {"axes", int64_tensor({3}, {0, 1, 2})},
                  {"steps", int64_tensor({3}, {2, -2, 3})}};
  sl.inputs = {"x", "starts", "ends", "axes", "steps"};
  cases.push_back({sl, kExact, "Slice"});

  OneNode ex;
  ex.op = "Expand";
  ex.feeds = {{"x", random_tensor(rng, {3, 1, 5})}};
  ex.constants = {{"shape", int64_tensor({4}, {2, 3, 4, 5})}};
  ex.inputs = {"x", "shape"};
  cases.push_back({ex, kExact, "Expand"});

  OneNode ga;
  ga.op = "Gather";
  ga.attrs = {attr_int("axis", 1)};
  ga.feeds = {{"x", random_tensor(rng, {3, 10, 4})}};
  ga.constants = {{"i", int64_tensor({2, 3}, {0, 9, -1, 4, 4, 2})}};
  ga.inputs = {"x", "i"};
  cases.push_back({ga, kExact, "Gather"});

  for (const char* mode : {"constant", "reflect", "edge"}) {
    OneNode pd;
    pd.op = "Pad";
    pd.attrs = {attr_string("mode", mode)};
    pd.feeds = {{"x", random_tensor(rng, {2, 3, 5, 6})}};
    pd.constants = {{"pads", int64_tensor({8}, {0, 1, 2, 3, 0, 2, 1, 2})},
                    {"v", ir::make_tensor<float>({}, {1.5f})}};
    pd.inputs = {"x", "pads", "v"};
    cases.push_back({pd, kExact, fmt::format("Pad {}", mode)});
  }

  struct R {
    const char* mode;
    const char* coord;
    std::vector<float> scales;
  };
  for (const R& r : std::vector<R>{{"nearest", "asymmetric", {1, 1, 2, 2}},
                                   {"linear", "half_pixel", {1, 1, 2, 1.5f}},
                                   {"linear", "align_corners", {1, 1, 0.5f, 2}},
                                   {"linear", "pytorch_half_pixel", {1, 1, 3, 3}}}) {
    OneNode rs;
    rs.op = "Resize";
    rs.opset = 13;
    rs.attrs = {attr_string("mode", r.mode), attr_string("coordinate_transformation_mode", r.coord),
                attr_string("nearest_mode", "floor")};
    rs.feeds = {{"x", random_tensor(rng, {1, 2, 6, 8})}};
    rs.constants = {{"scales", ir::make_tensor<float>({4}, std::span<const float>(r.scales))}};
    rs.inputs = {"x", "", "scales"};
    cases.push_back({rs, kSum, fmt::format("Resize {} {}", r.mode, r.coord)});
  }
  check_cases(cases);
}

// Cast is exact: every value below converts to one right answer (C's conversions; int64 to
// float rounds to nearest even: ties at 2^24 + 1 and 2^53 + 1 and a sticky bit far below).
TEST(VulkanOps, Cast) {
  const int64_t p24 = int64_t{1} << 24, p53 = int64_t{1} << 53;
  const std::vector<int64_t> wide = {0, 1, -1, p24 + 1, p24 + 3, -(p24 + 3), p53 + 1,
                                     (int64_t{1} << 62) + (int64_t{1} << 38) + 1,
                                     (int64_t{1} << 40) + (int64_t{1} << 16),
                                     std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max(), 123456789012, -7};
  const ir::Tensor i64 = int64_tensor({13}, wide);
  const ir::Tensor f32 = ir::make_tensor<float>(
      {3, 5}, {0.0f, -0.0f, 1.5f, -1.5f, -7.9f, 100.5f, 200.7f, 2e9f, -2.5e12f, 3e9f,
               1e-30f, std::nanf(""), 16777216.0f, -100.2f, 127.0f});
  const ir::Tensor big = ir::make_tensor<float>({4}, {3e9f, -2.5e12f, 1.5e18f, -9.2e18f});
  const ir::Tensor i32 =
      ir::make_tensor<int32_t>({5}, {0, -1, 16777217, 2147483647, -2147483647 - 1});
  ir::Tensor u8(ir::DType::kUInt8, {6}), i8(ir::DType::kInt8, {6}), b8(ir::DType::kBool, {6});
  for (int64_t i = 0; i < 6; ++i) {
    u8.data<uint8_t>()[i] = static_cast<uint8_t>(i * 51);
    i8.data<int8_t>()[i] = static_cast<int8_t>(i * 51 - 128);
    b8.data<bool>()[i] = i % 3 == 0;
  }
  struct C {
    const ir::Tensor* x;
    ir::DType to;
  };
  using D = ir::DType;
  const std::vector<C> casts = {
      {&i64, D::kFloat32}, {&i64, D::kInt32},   {&i64, D::kBool},    {&i64, D::kUInt8},
      {&f32, D::kInt64},   {&f32, D::kInt32},   {&f32, D::kBool},    {&i32, D::kFloat32},
      {&i32, D::kInt64},   {&u8, D::kFloat32},  {&i8, D::kFloat32},  {&i8, D::kInt64},
      {&b8, D::kFloat32},  {&b8, D::kInt32},    {&u8, D::kInt8},     {&i32, D::kBool},
      {&big, D::kInt64}};
  std::vector<Case> cases;
  for (const C& c : casts) {
    OneNode spec;
    spec.op = "Cast";
    spec.attrs = {attr_int("to", static_cast<int64_t>(c.to))};
    spec.feeds = {{"x", *c.x}};
    spec.inputs = {"x"};
    if (c.x == &f32 && c.to != D::kBool) {  // C leaves NaN and out-of-range values undefined
      ir::Tensor in_range = f32;
      for (float& v : in_range.span<float>()) v = std::isnan(v) || std::fabs(v) > 2e9f ? 3.0f : v;
      spec.feeds = {{"x", in_range}};
    }
    cases.push_back({spec, 0.0, fmt::format("Cast {} to {}", ir::dtype_name(c.x->dtype()),
                                            ir::dtype_name(c.to))});
  }
  OneNode like;
  like.op = "CastLike";
  like.opset = 15;
  like.feeds = {{"x", i64}};
  like.constants = {{"t", ir::make_tensor<float>({}, {0.0f})}};
  like.inputs = {"x", "t"};
  cases.push_back({like, 0.0, "CastLike int64 to float"});
  check_cases(cases);
}

TEST(VulkanOps, QuantizeDequantize) {
  std::vector<Case> cases;
  std::mt19937 rng(13);
  for (const bool per_channel : {false, true}) {
    for (const ir::DType q : {ir::DType::kInt8, ir::DType::kUInt8}) {
      const int64_t c = 5;
      ir::Tensor scale =
          per_channel ? random_tensor(rng, {c}, 0.01f, 0.05f) : ir::make_tensor<float>({}, {0.02f});
      ir::Tensor zero(q, per_channel ? ir::Shape{c} : ir::Shape{});
      for (int64_t i = 0; i < zero.size(); ++i) {
        if (q == ir::DType::kInt8) zero.data<int8_t>()[i] = static_cast<int8_t>(i * 3 - 4);
        else zero.data<uint8_t>()[i] = static_cast<uint8_t>(120 + i);
      }
      OneNode qn;
      qn.op = "QuantizeLinear";
      qn.attrs = {attr_int("axis", 1)};
      qn.feeds = {{"x", random_tensor(rng, {3, c, 7}, -4, 4)}};
      qn.constants = {{"s", scale}, {"z", zero}};
      qn.inputs = {"x", "s", "z"};
      // Exact: the quotient x / scale is rounded half to even on both; a difference of one
      // step would show as 1 / 255 of the range.
      cases.push_back(
          {qn, 1e-6,
           fmt::format("QuantizeLinear per-channel {} {}", per_channel, ir::dtype_name(q))});
      OneNode dq;
      dq.op = "DequantizeLinear";
      dq.attrs = {attr_int("axis", 1)};
      ir::Tensor xq(q, {3, c, 7});
      std::uniform_int_distribution<int> d(0, 255);
      for (int64_t i = 0; i < xq.size(); ++i)
        static_cast<uint8_t*>(xq.raw())[i] = static_cast<uint8_t>(d(rng));
      dq.feeds = {{"x", xq}};
      dq.constants = {{"s", scale}, {"z", zero}};
      dq.inputs = {"x", "s", "z"};
      cases.push_back(
          {dq, kExact,
           fmt::format("DequantizeLinear per-channel {} {}", per_channel, ir::dtype_name(q))});
    }
  }
  check_cases(cases);
}

}  // namespace
}  // namespace ptq::vulkan::testing
