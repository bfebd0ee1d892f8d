// The executor's graph optimizer (docs/DESIGN.md, "Optimizer"): each pattern on a small graph
// built here runs as its substitute and matches the unoptimized run (ExecutorOptions::optimize
// = false) within the stated tolerance, and a float64 formula where there is one; rewrites
// that keep the float operations (SiLU, Mish) and constant folding give the same bytes. An
// observer sees the bytes an unoptimized run makes: a rewrite whose inside it wants is not
// used, nor one that rounds otherwise upstream of what it wants. The test models give the same
// outputs with and without the optimizer.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

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

// A model with input x [shape] and output y; nodes and initializers are added after.
ir::Model model(std::vector<int64_t> shape, int64_t opset = 13, DType dtype = DType::kFloat32) {
  ir::Model m;
  m.set_opset("", opset);
  m.graph.inputs.push_back(value_info("x", shape, dtype));
  m.graph.outputs.push_back(value_info("y", {}, dtype));
  return m;
}

// Adds a scalar float32 initializer named `name`; returns the name.
std::string scalar(ir::Model& m, const std::string& name, float v) {
  m.graph.set_initializer(name, ir::make_tensor<float>({}, {v}));
  return name;
}

NamedTensors input(std::mt19937& rng, ir::Shape shape, float lo = -4.0f, float hi = 4.0f) {
  NamedTensors in;
  in.emplace_back("x", random_tensor(rng, std::move(shape), lo, hi));
  return in;
}

struct Result {
  NamedTensors outputs;
  RunStats stats;
};

Result run(const ir::Model& m, const NamedTensors& in, bool optimize,
           std::span<Observer* const> observers = {}) {
  auto backend = make_cpu_backend();
  ExecutorOptions o;
  o.threads = 2;
  o.optimize = optimize;
  auto exec = Executor::create(m, *backend, o);
  EXPECT_TRUE(exec.has_value()) << exec.status().message();
  if (!exec) return {};
  auto out = (*exec)->run(in, observers);
  EXPECT_TRUE(out.has_value()) << out.status().message();
  if (!out) return {};
  return Result{std::move(*out), (*exec)->last_run_stats()};
}

// |a - b| <= tol * (1 + |b|) elementwise, where b is finite.
void expect_close(const ir::Tensor& a, const ir::Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.as_double(i), y = b.as_double(i);
    if (!std::isfinite(y)) continue;
    ASSERT_LE(std::abs(x - y), tol * (1.0 + std::abs(y)))
        << "element " << i << ": " << x << " vs " << y;
  }
}

// y = f(x) in float64, elementwise, against the optimized output.
void expect_formula(const NamedTensors& in, const ir::Tensor& y, double (*f)(double), double tol) {
  ir::Tensor want(DType::kFloat64, in[0].second.shape());
  for (int64_t i = 0; i < want.size(); ++i) want.data<double>()[i] = f(in[0].second.as_double(i));
  expect_close(y, want, tol);
}

// Runs with and without the optimizer: `rewritten` nodes replaced, outputs within `tol` (0:
// the same bytes). Returns the optimized run.
Result check(const ir::Model& m, const NamedTensors& in, int64_t rewritten, double tol) {
  Result a = run(m, in, true), b = run(m, in, false);
  EXPECT_EQ(a.stats.rewritten, rewritten);
  EXPECT_EQ(b.stats.rewritten, 0);
  EXPECT_EQ(b.stats.folded, 0);
  EXPECT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size() && i < b.outputs.size(); ++i) {
    if (tol == 0.0) {
      EXPECT_TRUE(bit_identical(a.outputs[i].second, b.outputs[i].second)) << a.outputs[i].first;
    } else {
      expect_close(a.outputs[i].second, b.outputs[i].second, tol);
    }
  }
  return a;
}

// ---- Pow ------------------------------------------------------------------------------------

//   x -> Pow(2) -> y          x -> Abs -> Pow(0.5) -> z
TEST(Optimizer, PowSquareAndSquareRoot) {
  std::mt19937 rng(1);
  ir::Model m = model({3, 7, 11});
  m.graph.outputs.push_back(value_info("z", {}));
  m.graph.nodes.push_back(op_node("Pow", {"x", scalar(m, "two", 2.0f)}, {"y"}));
  m.graph.nodes.push_back(op_node("Abs", {"x"}, {"a"}));
  m.graph.nodes.push_back(op_node("Pow", {"a", scalar(m, "half", 0.5f)}, {"z"}));
  const NamedTensors in = input(rng, {3, 7, 11});
  const Result r = check(m, in, 2, 1.2e-7);
  expect_formula(
      in, r.outputs[0].second, [](double v) { return v * v; }, 1e-7);
  expect_formula(
      in, r.outputs[1].second, [](double v) { return std::sqrt(std::abs(v)); }, 1e-7);
}

// An exponent that is neither (3) stays a Pow; so does one that is not a constant.
TEST(Optimizer, OtherPowsStay) {
  std::mt19937 rng(2);
  ir::Model m = model({4, 5});
  m.graph.outputs.push_back(value_info("z", {}));
  m.graph.nodes.push_back(op_node("Pow", {"x", scalar(m, "three", 3.0f)}, {"y"}));
  m.graph.nodes.push_back(op_node("Pow", {"x", "x"}, {"z"}));
  check(m, input(rng, {4, 5}, 0.5f, 2.0f), 0, 0.0);
}

// ---- LayerNorm ------------------------------------------------------------------------------

// PyTorch's opset-13 export of LayerNorm over the trailing `axes` (negative), with the
// variance's square as Pow(d, 2) or Mul(d, d), and the affine part Mul(scale), Add(bias)
// present as far as `affine` (0, 1 or 2) says:
//
//   x ─► ReduceMean ─► Sub(x, .) ─► d ─► Pow(2) ─► ReduceMean ─► Add(eps) ─► Sqrt ─► s
//   d, s ─► Div ─► n ─► [Mul(scale) ─► [Add(bias)]] ─► y
ir::Model layer_norm_model(std::mt19937& rng, std::vector<int64_t> shape, std::vector<int64_t> axes,
                           int affine, bool mul_square) {
  ir::Model m = model(shape);
  const ir::Attribute ax = attr_ints("axes", axes);
  m.graph.nodes.push_back(op_node("ReduceMean", {"x"}, {"mean"}, {ax}));
  m.graph.nodes.push_back(op_node("Sub", {"x", "mean"}, {"d"}));
  if (mul_square) {
    m.graph.nodes.push_back(op_node("Mul", {"d", "d"}, {"p"}));
  } else {
    m.graph.nodes.push_back(op_node("Pow", {"d", scalar(m, "two", 2.0f)}, {"p"}));
  }
  m.graph.nodes.push_back(op_node("ReduceMean", {"p"}, {"var"}, {ax}));
  m.graph.nodes.push_back(op_node("Add", {"var", scalar(m, "eps", 1e-5f)}, {"ve"}));
  m.graph.nodes.push_back(op_node("Sqrt", {"ve"}, {"s"}));
  m.graph.nodes.push_back(op_node("Div", {"d", "s"}, {affine == 0 ? "y" : "n"}));
  ir::Shape norm(shape.end() + axes.front(), shape.end());
  if (affine >= 1) {
    m.graph.set_initializer("scale", random_tensor(rng, norm, 0.5f, 1.5f));
    m.graph.nodes.push_back(op_node("Mul", {"n", "scale"}, {affine == 1 ? "y" : "sc"}));
  }
  if (affine >= 2) {
    m.graph.set_initializer("bias", random_tensor(rng, norm));
    m.graph.nodes.push_back(op_node("Add", {"sc", "bias"}, {"y"}));
  }
  return m;
}

// The LayerNorm of `x` over its last `d` elements in float64, with the model's scale and bias.
ir::Tensor layer_norm_reference(const ir::Model& m, const ir::Tensor& x, int64_t d) {
  const ir::Tensor* scale = m.graph.initializer("scale");
  const ir::Tensor* bias = m.graph.initializer("bias");
  ir::Tensor y(DType::kFloat64, x.shape());
  for (int64_t r = 0; r < x.size() / d; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < d; ++j) mean += x.as_double(r * d + j) / static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j)
      var += std::pow(x.as_double(r * d + j) - mean, 2) / static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) {
      double v = (x.as_double(r * d + j) - mean) / std::sqrt(var + 1e-5);
      if (scale != nullptr) v *= scale->as_double(j);
      if (bias != nullptr) v += bias->as_double(j);
      y.data<double>()[r * d + j] = v;
    }
  }
  return y;
}

TEST(Optimizer, LayerNormWithScaleAndBias) {
  std::mt19937 rng(3);
  const ir::Model m = layer_norm_model(rng, {2, 5, 48}, {-1}, 2, false);
  const NamedTensors in = input(rng, {2, 5, 48});
  const Result r = check(m, in, 9, 2e-6);
  expect_close(r.outputs[0].second, layer_norm_reference(m, in[0].second, 48), 2e-6);
}

TEST(Optimizer, LayerNormWithScaleOnly) {
  std::mt19937 rng(4);
  const ir::Model m = layer_norm_model(rng, {3, 40}, {-1}, 1, false);
  const NamedTensors in = input(rng, {3, 40});
  const Result r = check(m, in, 8, 2e-6);
  expect_close(r.outputs[0].second, layer_norm_reference(m, in[0].second, 40), 2e-6);
}

// No affine part, two trailing axes, the square spelled Mul(d, d).
TEST(Optimizer, LayerNormBareOverTwoAxes) {
  std::mt19937 rng(5);
  const ir::Model m = layer_norm_model(rng, {2, 3, 4, 5}, {-2, -1}, 0, true);
  const NamedTensors in = input(rng, {2, 3, 4, 5});
  const Result r = check(m, in, 7, 2e-6);
  expect_close(r.outputs[0].second, layer_norm_reference(m, in[0].second, 20), 2e-6);
}

// A positive axis (the rank is not known when the executor plans) is not a LayerNorm to it.
TEST(Optimizer, LayerNormOverAPositiveAxisStays) {
  std::mt19937 rng(6);
  ir::Model m = layer_norm_model(rng, {3, 8}, {-1}, 0, false);
  m.graph.nodes[0].attributes = {attr_ints("axes", {1})};
  check(m, input(rng, {3, 8}), 1, 1.2e-7);  // only Pow(d, 2)
}

// ---- Gelu -----------------------------------------------------------------------------------

double gelu(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double gelu_tanh(double v) {
  const double pi = 3.14159265358979323846;
  return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (v + 0.044715 * v * v * v)));
}

//   x -> Div(1.4142135) -> Erf -> Add(1) -> Mul(x, .) -> Mul(0.5) -> y      (PyTorch's export)
TEST(Optimizer, GeluErfDivForm) {
  std::mt19937 rng(7);
  ir::Model m = model({4, 33});
  m.graph.nodes.push_back(op_node("Div", {"x", scalar(m, "sqrt2", 1.4142135f)}, {"t"}));
  m.graph.nodes.push_back(op_node("Erf", {"t"}, {"e"}));
  m.graph.nodes.push_back(op_node("Add", {"e", scalar(m, "one", 1.0f)}, {"a"}));
  m.graph.nodes.push_back(op_node("Mul", {"x", "a"}, {"xa"}));
  m.graph.nodes.push_back(op_node("Mul", {"xa", scalar(m, "half", 0.5f)}, {"y"}));
  const NamedTensors in = input(rng, {4, 33});
  const Result r = check(m, in, 5, 1e-6);
  expect_formula(in, r.outputs[0].second, gelu, 1e-6);
}

//   x -> Mul(0.70710677) -> Erf -> Add(1) -+
//   x -> Mul(0.5) -------------------------+-> Mul -> y
TEST(Optimizer, GeluErfMulForm) {
  std::mt19937 rng(8);
  ir::Model m = model({65});
  m.graph.nodes.push_back(op_node("Mul", {scalar(m, "rsqrt2", 0.70710677f), "x"}, {"t"}));
  m.graph.nodes.push_back(op_node("Erf", {"t"}, {"e"}));
  m.graph.nodes.push_back(op_node("Add", {scalar(m, "one", 1.0f), "e"}, {"a"}));
  m.graph.nodes.push_back(op_node("Mul", {"x", scalar(m, "half", 0.5f)}, {"h"}));
  m.graph.nodes.push_back(op_node("Mul", {"h", "a"}, {"y"}));
  const NamedTensors in = input(rng, {65});
  const Result r = check(m, in, 5, 1e-6);
  expect_formula(in, r.outputs[0].second, gelu, 1e-6);
}

// PyTorch's opset-13 export of gelu(approximate="tanh"):
//   x -> Mul(x, x) -> Mul(x, .) -> Mul(0.044715) -> Add(x, .) -> Mul(sqrt(2/pi)) -> Tanh
//     -> Add(1) -> Mul(x, .) -> Mul(0.5) -> y
TEST(Optimizer, GeluTanhMulForm) {
  std::mt19937 rng(9);
  ir::Model m = model({3, 20});
  m.graph.nodes.push_back(op_node("Mul", {"x", "x"}, {"sq"}));
  m.graph.nodes.push_back(op_node("Mul", {"x", "sq"}, {"cube"}));
  m.graph.nodes.push_back(op_node("Mul", {scalar(m, "kappa", 0.044715f), "cube"}, {"kc"}));
  m.graph.nodes.push_back(op_node("Add", {"x", "kc"}, {"s"}));
  m.graph.nodes.push_back(op_node("Mul", {scalar(m, "beta", 0.7978846f), "s"}, {"inner"}));
  m.graph.nodes.push_back(op_node("Tanh", {"inner"}, {"t"}));
  m.graph.nodes.push_back(op_node("Add", {scalar(m, "one", 1.0f), "t"}, {"a"}));
  m.graph.nodes.push_back(op_node("Mul", {"x", "a"}, {"xa"}));
  m.graph.nodes.push_back(op_node("Mul", {scalar(m, "half", 0.5f), "xa"}, {"y"}));
  const NamedTensors in = input(rng, {3, 20});
  const Result r = check(m, in, 9, 1e-6);
  expect_formula(in, r.outputs[0].second, gelu_tanh, 1e-6);
}

// Hugging Face's NewGELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))).
TEST(Optimizer, GeluTanhPowForm) {
  std::mt19937 rng(10);
  ir::Model m = model({2, 31});
  m.graph.nodes.push_back(op_node("Mul", {scalar(m, "half", 0.5f), "x"}, {"h"}));
  m.graph.nodes.push_back(op_node("Pow", {"x", scalar(m, "three", 3.0f)}, {"cube"}));
  m.graph.nodes.push_back(op_node("Mul", {"cube", scalar(m, "kappa", 0.044715f)}, {"kc"}));
  m.graph.nodes.push_back(op_node("Add", {"x", "kc"}, {"s"}));
  m.graph.nodes.push_back(op_node("Mul", {"s", scalar(m, "beta", 0.7978846f)}, {"inner"}));
  m.graph.nodes.push_back(op_node("Tanh", {"inner"}, {"t"}));
  m.graph.nodes.push_back(op_node("Add", {"t", scalar(m, "one", 1.0f)}, {"a"}));
  m.graph.nodes.push_back(op_node("Mul", {"h", "a"}, {"y"}));
  const NamedTensors in = input(rng, {2, 31});
  const Result r = check(m, in, 8, 1e-6);
  expect_formula(in, r.outputs[0].second, gelu_tanh, 1e-6);
}

// ---- HardSigmoid, HardSwish -------------------------------------------------------------------

double hard_swish(double v) { return v * std::clamp(v / 6.0 + 0.5, 0.0, 1.0); }
double hard_sigmoid(double v) { return std::clamp(v / 6.0 + 0.5, 0.0, 1.0); }

// The OCR recognizers' spelling: x -> Add(3) -> Clip(0, 6) -> Mul(x, .) -> Div(6) -> y
TEST(Optimizer, HardSwishAddClipMulDiv) {
  std::mt19937 rng(11);
  ir::Model m = model({2, 8, 5, 5});
  m.graph.nodes.push_back(op_node("Add", {"x", scalar(m, "three", 3.0f)}, {"a"}));
  m.graph.nodes.push_back(
      op_node("Clip", {"a", scalar(m, "zero", 0.0f), scalar(m, "six", 6.0f)}, {"c"}));
  m.graph.nodes.push_back(op_node("Mul", {"x", "c"}, {"xc"}));
  m.graph.nodes.push_back(op_node("Div", {"xc", "six"}, {"y"}));
  const NamedTensors in = input(rng, {2, 8, 5, 5}, -8.0f, 8.0f);
  const Result r = check(m, in, 4, 2.5e-7);
  expect_formula(in, r.outputs[0].second, hard_swish, 2.5e-7);
}

//   x -> Add(3) -> Clip(0, 6) -> Div(6) -> Mul(x, .) -> y       (HardSwish)
//   x -> Add(3) -> Clip(0, 6) -> Mul(1/6) -> z                   (HardSigmoid; opset 10 Clip)
TEST(Optimizer, HardSwishAndHardSigmoidThroughTheSigmoid) {
  std::mt19937 rng(12);
  ir::Model m = model({3, 17}, 10);
  m.graph.outputs.push_back(value_info("z", {}));
  const std::vector<ir::Attribute> relu6 = {attr_float("min", 0.0f), attr_float("max", 6.0f)};
  m.graph.nodes.push_back(op_node("Add", {"x", scalar(m, "three", 3.0f)}, {"a"}));
  m.graph.nodes.push_back(op_node("Clip", {"a"}, {"c"}, relu6));
  m.graph.nodes.push_back(op_node("Div", {"c", scalar(m, "six", 6.0f)}, {"h"}));
  m.graph.nodes.push_back(op_node("Mul", {"h", "x"}, {"y"}));
  m.graph.nodes.push_back(op_node("Add", {"x", "three"}, {"a2"}));
  m.graph.nodes.push_back(op_node("Clip", {"a2"}, {"c2"}, relu6));
  m.graph.nodes.push_back(op_node("Mul", {"c2", scalar(m, "sixth", 1.0f / 6.0f)}, {"z"}));
  const NamedTensors in = input(rng, {3, 17}, -8.0f, 8.0f);
  const Result r = check(m, in, 7, 2.5e-7);
  expect_formula(in, r.outputs[0].second, hard_swish, 2.5e-7);
  expect_formula(in, r.outputs[1].second, hard_sigmoid, 2.5e-7);
}

// PyTorch's export of nn.Hardswish before opset 14: x -> HardSigmoid(1/6, 0.5) -> Mul(x, .)
TEST(Optimizer, HardSwishFromHardSigmoid) {
  std::mt19937 rng(13);
  ir::Model m = model({40});
  m.graph.nodes.push_back(op_node("HardSigmoid", {"x"}, {"h"},
                                  {attr_float("alpha", 1.0f / 6.0f), attr_float("beta", 0.5f)}));
  m.graph.nodes.push_back(op_node("Mul", {"x", "h"}, {"y"}));
  const NamedTensors in = input(rng, {40}, -8.0f, 8.0f);
  const Result r = check(m, in, 2, 2.5e-7);
  expect_formula(in, r.outputs[0].second, hard_swish, 2.5e-7);
}

// ---- SiLU, Mish -------------------------------------------------------------------------------

// x -> Sigmoid -> Mul(., x) -> y: Swish computes it with the same float operations. Inputs
// include NaN, infinities and -0.
TEST(Optimizer, SiluIsBitIdentical) {
  std::mt19937 rng(14);
  ir::Model m = model({5, 41});
  m.graph.nodes.push_back(op_node("Sigmoid", {"x"}, {"s"}));
  m.graph.nodes.push_back(op_node("Mul", {"s", "x"}, {"y"}));
  NamedTensors in = input(rng, {5, 41}, -30.0f, 30.0f);
  float* x = in[0].second.data<float>();
  x[0] = NAN;
  x[1] = INFINITY;
  x[2] = -INFINITY;
  x[3] = -0.0f;
  const Result r = check(m, in, 2, 0.0);
  expect_formula(
      in, r.outputs[0].second, [](double v) { return v / (1 + std::exp(-v)); }, 2e-7);
}

// x -> Softplus -> Tanh -> Mul(x, .) -> y
TEST(Optimizer, MishIsBitIdentical) {
  std::mt19937 rng(15);
  ir::Model m = model({7, 13});
  m.graph.nodes.push_back(op_node("Softplus", {"x"}, {"sp"}));
  m.graph.nodes.push_back(op_node("Tanh", {"sp"}, {"t"}));
  m.graph.nodes.push_back(op_node("Mul", {"x", "t"}, {"y"}));
  const NamedTensors in = input(rng, {7, 13}, -20.0f, 20.0f);
  const Result r = check(m, in, 3, 0.0);
  expect_formula(
      in, r.outputs[0].second, [](double v) { return v * std::tanh(std::log1p(std::exp(v))); },
      2e-7);
}

// The patterns are float32 arithmetic: on float64 data the nodes run as they are.
TEST(Optimizer, OtherDtypesRunTheNodes) {
  ir::Model m = model({6}, 13, DType::kFloat64);
  m.graph.nodes.push_back(op_node("Sigmoid", {"x"}, {"s"}));
  m.graph.nodes.push_back(op_node("Mul", {"x", "s"}, {"y"}));
  NamedTensors in;
  in.emplace_back("x", ir::make_tensor<double>({6}, {-3, -1, 0, 0.5, 2, 7}));
  check(m, in, 0, 0.0);
}

// A value inside a pattern that another node reads, or that is a graph output, keeps it.
TEST(Optimizer, SharedOrOutputTensorsAreNotRewritten) {
  std::mt19937 rng(16);
  ir::Model shared = model({9});
  shared.graph.outputs.push_back(value_info("z", {}));
  shared.graph.nodes.push_back(op_node("Sigmoid", {"x"}, {"s"}));
  shared.graph.nodes.push_back(op_node("Mul", {"x", "s"}, {"y"}));
  shared.graph.nodes.push_back(op_node("Neg", {"s"}, {"z"}));
  check(shared, input(rng, {9}), 0, 0.0);
  ir::Model out = model({9});
  out.graph.outputs.push_back(value_info("s", {}));
  out.graph.nodes.push_back(op_node("Sigmoid", {"x"}, {"s"}));
  out.graph.nodes.push_back(op_node("Mul", {"x", "s"}, {"y"}));
  check(out, input(rng, {9}), 0, 0.0);
}

// ---- constant folding -------------------------------------------------------------------------

//   w_q (int8), w_s -> DequantizeLinear -> w -> MatMul(x, .) -> m1
//   r (initializer) -> Reshape([4, 3]) -> rr -> Add(m1, .) -> y
//   shape [64, 1024] -> ConstantOfShape -> big (256 KiB from 16 bytes: not folded) -> Mul(x', .)
TEST(Optimizer, ConstantFoldingGivesTheSameBytes) {
  std::mt19937 rng(17);
  ir::Model m = model({4, 6});
  m.graph.outputs.push_back(value_info("z", {}));
  m.graph.inputs.push_back(value_info("x2", {64, 1024}));
  std::vector<int8_t> q(18);
  for (size_t i = 0; i < q.size(); ++i)
    q[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 255) - 127);
  m.graph.set_initializer("w_q", ir::make_tensor<int8_t>({6, 3}, q));
  m.graph.set_initializer("w_s", ir::make_tensor<float>({}, {0.02f}));
  m.graph.set_initializer("r", random_tensor(rng, {12}));
  m.graph.set_initializer("r_shape", ir::make_tensor<int64_t>({2}, {4, 3}));
  m.graph.set_initializer("big_shape", ir::make_tensor<int64_t>({2}, {64, 1024}));
  m.graph.nodes.push_back(op_node("DequantizeLinear", {"w_q", "w_s"}, {"w"}));
  m.graph.nodes.push_back(op_node("MatMul", {"x", "w"}, {"m1"}));
  m.graph.nodes.push_back(op_node("Reshape", {"r", "r_shape"}, {"rr"}));
  m.graph.nodes.push_back(op_node("Add", {"m1", "rr"}, {"y"}));
  ir::Attribute fill;
  fill.name = "value";
  fill.type = ir::AttrType::kTensor;
  fill.t = ir::make_tensor<float>({1}, {1.5f});
  m.graph.nodes.push_back(op_node("ConstantOfShape", {"big_shape"}, {"big"}, {fill}));
  m.graph.nodes.push_back(op_node("Mul", {"x2", "big"}, {"z"}));
  NamedTensors in = input(rng, {4, 6});
  in.emplace_back("x2", random_tensor(rng, {64, 1024}));
  const Result r = check(m, in, 0, 0.0);
  EXPECT_EQ(r.stats.folded, 2);
  EXPECT_EQ(r.stats.steps, 4);
}

// ---- observers ------------------------------------------------------------------------------

// Keeps a copy of every wanted tensor it is shown.
class Keeper final : public Observer {
 public:
  explicit Keeper(std::vector<std::string> want) : want_(std::move(want)) {}
  std::vector<std::string> wanted(const ir::Graph&) override { return want_; }
  Status observe(const ObservedTensor& t) override {
    ir::Tensor copy(t.dtype, t.shape);
    std::memcpy(copy.raw(), t.host->raw(), copy.nbytes());
    seen[t.name] = std::move(copy);
    return Status::ok();
  }
  std::map<std::string, ir::Tensor> seen;

 private:
  std::vector<std::string> want_;
};

// An observer is shown the bytes an unoptimized run makes: wanting the LayerNorm's mean keeps
// it apart (its Pow still becomes a Mul: nothing wanted comes after it); wanting its output, or
// anything after it, keeps everything upstream as the model spells it; SiLU, which keeps the
// float operations, is used while its output is wanted, not while its Sigmoid is.
TEST(Optimizer, ObserversSeeTheUnoptimizedBytes) {
  std::mt19937 rng(18);
  ir::Model m = layer_norm_model(rng, {2, 4, 24}, {-1}, 2, false);
  m.graph.nodes.push_back(op_node("Sigmoid", {"y"}, {"sg"}));
  m.graph.nodes.push_back(op_node("Mul", {"y", "sg"}, {"silu"}));
  m.graph.outputs[0].name = "silu";
  const NamedTensors in = input(rng, {2, 4, 24});
  const std::vector<std::pair<std::vector<std::string>, int64_t>> cases = {
      {{"mean"}, 3}, {{"y"}, 2}, {{"sg"}, 0}, {{"silu"}, 2}, {{"x", "d"}, 3}};
  for (const auto& [want, rewritten] : cases) {
    SCOPED_TRACE(want[0]);
    Keeper optimized_seen(want), plain_seen(want);
    Observer* o[] = {&optimized_seen};
    Observer* p[] = {&plain_seen};
    const Result a = run(m, in, true, o), b = run(m, in, false, p);
    EXPECT_EQ(a.stats.rewritten, rewritten);
    for (const std::string& name : want) {
      ASSERT_TRUE(optimized_seen.seen.count(name)) << name;
      EXPECT_TRUE(bit_identical(optimized_seen.seen[name], plain_seen.seen[name])) << name;
    }
    expect_close(a.outputs[0].second, b.outputs[0].second, 2e-6);
  }
}

// One executor alternating runs with and without an observer uses the rewrites each allows:
// observed runs give an unoptimized run's bytes, the others an optimized one's.
TEST(Optimizer, AlternatingObserversKeepResults) {
  std::mt19937 rng(19);
  const ir::Model m = layer_norm_model(rng, {3, 16}, {-1}, 2, false);
  const NamedTensors in = input(rng, {3, 16});
  auto backend = make_cpu_backend();
  auto exec = Executor::create(m, *backend, ExecutorOptions{});
  ASSERT_TRUE(exec.has_value());
  Keeper keeper({"var"});
  Observer* obs[] = {&keeper};
  const Result optimized = run(m, in, true), plain = run(m, in, false);
  for (int i = 0; i < 4; ++i) {
    const bool observed = i % 2 == 1;
    auto out = observed ? (*exec)->run(in, obs) : (*exec)->run(in);
    ASSERT_TRUE(out.has_value()) << out.status().message();
    EXPECT_EQ((*exec)->last_run_stats().rewritten, observed ? 0 : 9) << i;
    const Result& want = observed ? plain : optimized;
    EXPECT_TRUE(bit_identical((*out)[0].second, want.outputs[0].second)) << i;
  }
}

// value_shapes() of a rewritten LayerNorm gives each hidden value the shape an observer of an
// unoptimized run is shown (the mean and variance with the normalised axis at 1).
TEST(Optimizer, ValueShapesOfHiddenValues) {
  std::mt19937 rng(20);
  const ir::Model m = layer_norm_model(rng, {2, 3, 10}, {-1}, 2, false);
  const NamedTensors in = input(rng, {2, 3, 10});
  auto backend = make_cpu_backend();
  auto exec = Executor::create(m, *backend, ExecutorOptions{});
  ASSERT_TRUE(exec.has_value());
  ASSERT_TRUE((*exec)->run(in).has_value());
  EXPECT_EQ((*exec)->last_run_stats().rewritten, 9);
  const std::vector<std::string> all = {"x", "mean", "d", "p", "var", "ve", "s", "n", "sc", "y"};
  Keeper seen(all);
  Observer* o[] = {&seen};
  run(m, in, false, o);
  const auto shapes = (*exec)->value_shapes();
  ASSERT_EQ(shapes.size(), all.size());
  for (const auto& [name, shape] : shapes) EXPECT_EQ(shape, seen.seen[name].shape()) << name;
}

// ---- the test models --------------------------------------------------------------------------

// A test model on its first four samples (or seeded random images): `rewritten` nodes
// replaced, outputs within `tol` relative L2 of an unoptimized run (0: the same bytes).
void check_model(const std::string& name, int64_t rewritten, double tol) {
  const fs::path dir = test_data_dir() / "models";
  ASSERT_TRUE(fs::exists(dir / (name + ".onnx"))) << dir << ": run scripts/make-testdata.sh";
  auto m = onnx::load_model(dir / (name + ".onnx"));
  ASSERT_TRUE(m.has_value()) << m.status().message();
  NamedTensors in;
  const std::string input_name = m->graph.real_inputs().at(0)->name;
  if (name == "transformer") {
    auto samples = read_npy(dir / (name + ".samples.npy"));
    ASSERT_TRUE(samples.has_value()) << samples.status().message();
    in.emplace_back(input_name, std::move(*samples));
  } else {
    std::mt19937 rng(21);
    in.emplace_back(input_name, random_tensor(rng, {2, 3, 224, 224}, -2, 2));
  }
  const Result a = run(*m, in, true), b = run(*m, in, false);
  EXPECT_EQ(a.stats.rewritten, rewritten);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    if (tol == 0.0) {
      EXPECT_TRUE(bit_identical(a.outputs[i].second, b.outputs[i].second)) << a.outputs[i].first;
    } else {
      EXPECT_LE(rel_l2(a.outputs[i].second, b.outputs[i].second), tol) << a.outputs[i].first;
    }
  }
}

TEST(OptimizerModels, ResNet18) { check_model("resnet18", 0, 0.0); }
TEST(OptimizerModels, MobileNetV2) { check_model("mobilenet_v2", 0, 0.0); }
// Its two Gelus are exported as Div/Erf/Add/Mul/Mul.
TEST(OptimizerModels, Transformer) { check_model("transformer", 10, 1e-6); }

}  // namespace
}  // namespace ptq::runtime::testing
