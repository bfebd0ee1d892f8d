// Elementwise kernels against naive float64 references: numpy broadcasting on random shapes,
// variadic ops, integer arithmetic, half precision, activations, thread-count invariance.
#include <cmath>
#include <limits>

#include "elementwise_base.h"  // convert_into
#include "op_test_util.h"

namespace ptq::test {
namespace {

// Flat offset into `in` (right-aligned, size-1 dims broadcast) of output multi-index `idx`.
int64_t broadcast_offset(const std::vector<int64_t>& idx, const ir::Shape& in) {
  const size_t lead = idx.size() - in.size();
  int64_t off = 0;
  for (size_t d = 0; d < in.size(); ++d) off = off * in[d] + (in[d] == 1 ? 0 : idx[lead + d]);
  return off;
}

template <typename F>
std::vector<double> naive_binary(const ir::Tensor& a, const ir::Tensor& b, const ir::Shape& out,
                                 F f) {
  std::vector<double> r(static_cast<size_t>(ir::num_elements(out)));
  for (size_t i = 0; i < r.size(); ++i) {
    const auto idx = unravel(static_cast<int64_t>(i), out);
    r[i] = f(a.as_double(broadcast_offset(idx, a.shape())),
             b.as_double(broadcast_offset(idx, b.shape())));
  }
  return r;
}

struct ShapePair {
  ir::Shape a, b, out;
};

const ShapePair kPairs[] = {
    {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}},       {{2, 3, 4}, {}, {2, 3, 4}},
    {{}, {5, 2}, {5, 2}},                    {{2, 3, 4}, {4}, {2, 3, 4}},
    {{2, 1, 4}, {3, 1}, {2, 3, 4}},          {{1, 3, 1, 5}, {2, 1, 7, 1}, {2, 3, 7, 5}},
    {{4, 1}, {1, 4}, {4, 4}},                {{2, 3, 1}, {2, 3, 4}, {2, 3, 4}},
    {{3, 0, 2}, {1, 2}, {3, 0, 2}},          {{64, 300}, {300}, {64, 300}},
};

TEST(Elementwise, BinaryBroadcastMatchesNaive) {
  std::mt19937 rng(1);
  struct Case {
    const char* op;
    double (*f)(double, double);
  };
  const Case cases[] = {
      {"Add", [](double x, double y) { return x + y; }},
      {"Sub", [](double x, double y) { return x - y; }},
      {"Mul", [](double x, double y) { return x * y; }},
      {"Div", [](double x, double y) { return x / y; }},
      {"Max", [](double x, double y) { return std::max(x, y); }},
      {"Min", [](double x, double y) { return std::min(x, y); }},
      {"Pow", [](double x, double y) { return std::pow(std::abs(x), y); }},
  };
  for (const Case& c : cases) {
    for (const ShapePair& p : kPairs) {
      SCOPED_TRACE(fmt::format("{} {} {}", c.op, ir::shape_str(p.a), ir::shape_str(p.b)));
      ir::Tensor a = random_tensor(rng, p.a, 0.5f, 2.0f);
      ir::Tensor b = random_tensor(rng, p.b, -2.0f, 2.0f);
      if (std::string(c.op) == "Div") {
        for (float& v : b.span<float>()) v = v < 0 ? v - 0.5f : v + 0.5f;
      }
      const ir::Tensor y = run1(op(c.op).build(2), {&a, &b});
      expect_close(y, naive_binary(a, b, p.out, c.f), p.out, 1e-5, 1e-6);
      // Bit-identical for any thread count.
      const ir::Tensor y4 = run1(op(c.op).build(2), {&a, &b}, 17, 4);
      EXPECT_TRUE(same_bytes(y, y4));
    }
  }
}

TEST(Elementwise, ComparisonsAndWhereBroadcast) {
  std::mt19937 rng(2);
  for (const ShapePair& p : kPairs) {
    ir::Tensor a = random_int64(rng, p.a, -3, 3);
    ir::Tensor b = random_int64(rng, p.b, -3, 3);
    const ir::Tensor eq = run1(op("Equal").build(2), {&a, &b});
    const ir::Tensor lt = run1(op("Less").build(2), {&a, &b});
    const ir::Tensor gt = run1(op("Greater").build(2), {&a, &b});
    ASSERT_EQ(eq.dtype(), ir::DType::kBool);
    expect_close(eq, naive_binary(a, b, p.out, [](double x, double y) { return double(x == y); }),
                 p.out, 0, 0);
    expect_close(lt, naive_binary(a, b, p.out, [](double x, double y) { return double(x < y); }),
                 p.out, 0, 0);
    expect_close(gt, naive_binary(a, b, p.out, [](double x, double y) { return double(x > y); }),
                 p.out, 0, 0);
    // Where(a < b, a, b) == elementwise min.
    const ir::Tensor w = run1(op("Where").build(3), {&lt, &a, &b});
    expect_close(w, naive_binary(a, b, p.out, [](double x, double y) { return std::min(x, y); }),
                 p.out, 0, 0);
  }
}

TEST(Elementwise, VariadicSumMeanMaxBroadcast) {
  std::mt19937 rng(3);
  const ir::Tensor a = random_tensor(rng, {2, 1, 4}, -2.0f, 2.0f);
  const ir::Tensor b = random_tensor(rng, {3, 1}, -2.0f, 2.0f);
  const ir::Tensor c = random_tensor(rng, {4}, -2.0f, 2.0f);
  const ir::Shape out = {2, 3, 4};
  std::vector<double> sum(24), mx(24);
  for (int64_t i = 0; i < 24; ++i) {
    const auto idx = unravel(i, out);
    const double x = a.as_double(broadcast_offset(idx, a.shape()));
    const double y = b.as_double(broadcast_offset(idx, b.shape()));
    const double z = c.as_double(broadcast_offset(idx, c.shape()));
    sum[static_cast<size_t>(i)] = x + y + z;
    mx[static_cast<size_t>(i)] = std::max({x, y, z});
  }
  expect_close(run1(op("Sum").build(3), {&a, &b, &c}), sum, out);
  std::vector<double> mean = sum;
  for (double& v : mean) v /= 3;
  expect_close(run1(op("Mean").build(3), {&a, &b, &c}), mean, out);
  expect_close(run1(op("Max").build(3), {&a, &b, &c}), mx, out);
  // A single input is copied.
  expect_close(run1(op("Sum").build(1), {&c}),
               std::vector<double>(c.span<float>().begin(), c.span<float>().end()), {4});
}

TEST(Elementwise, Int64ArithmeticTruncatesLikeC) {
  const ir::Tensor a = ir::make_tensor<int64_t>({4}, {7, -7, 9, int64_t{1} << 40});
  const ir::Tensor b = ir::make_tensor<int64_t>({4}, {2, 2, -4, 3});
  const ir::Tensor q = run1(op("Div").build(2), {&a, &b});
  EXPECT_EQ(q.dtype(), ir::DType::kInt64);
  EXPECT_EQ(std::vector<int64_t>(q.span<int64_t>().begin(), q.span<int64_t>().end()),
            (std::vector<int64_t>{3, -3, -2, (int64_t{1} << 40) / 3}));
  const ir::Tensor m = run1(op("Mul").build(2), {&a, &b});
  EXPECT_EQ(m.span<int64_t>()[3], (int64_t{1} << 40) * 3);
  // Mod with fmod=0 takes the divisor's sign (Python %), fmod=1 the dividend's (C fmod).
  const ir::Tensor r0 = run1(op("Mod").build(2), {&a, &b});
  EXPECT_EQ(r0.span<int64_t>()[1], 1);
  EXPECT_EQ(r0.span<int64_t>()[2], -3);
  const ir::Tensor r1 = run1(op("Mod").i("fmod", 1).build(2), {&a, &b});
  EXPECT_EQ(r1.span<int64_t>()[1], -1);
  EXPECT_EQ(r1.span<int64_t>()[2], 1);
}

TEST(Elementwise, HalfPrecisionComputesInFloat) {
  std::mt19937 rng(4);
  const ir::Tensor a = random_tensor(rng, {3, 5}, -2.0f, 2.0f);
  const ir::Tensor b = random_tensor(rng, {5}, -2.0f, 2.0f);
  ir::Tensor ah(ir::DType::kFloat16, a.shape()), bh(ir::DType::kFloat16, b.shape());
  runtime::cpu::convert_into(a, ah, 1);
  runtime::cpu::convert_into(b, bh, 1);
  const ir::Tensor y = run1(op("Add").build(2), {&ah, &bh});
  ASSERT_EQ(y.dtype(), ir::DType::kFloat16);
  const auto want = naive_binary(ah, bh, {3, 5}, [](double x, double y) { return x + y; });
  expect_close(y, want, {3, 5}, 1e-3, 1e-3);
  const ir::Tensor r = run1(op("Relu").build(1), {&ah});
  ASSERT_EQ(r.dtype(), ir::DType::kFloat16);
  for (int64_t i = 0; i < r.size(); ++i) EXPECT_EQ(r.as_double(i), std::max(0.0, ah.as_double(i)));
}

TEST(Activation, FormulasMatchFloat64) {
  std::mt19937 rng(5);
  const ir::Tensor x = random_tensor(rng, {257}, -6.0f, 6.0f);
  struct Case {
    ir::Node node;
    double (*f)(double);
    int64_t opset;
  };
  static const double pi = 3.14159265358979323846;
  const Case cases[] = {
      {op("Gelu").build(1), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); },
       20},
      {op("Gelu").s("approximate", "tanh").build(1),
       [](double v) {
         return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)));
       },
       20},
      {op("HardSwish").build(1), [](double v) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); },
       17},
      {op("HardSigmoid").build(1), [](double v) { return std::clamp(0.2 * v + 0.5, 0.0, 1.0); },
       17},
      {op("Mish").build(1), [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }, 18},
      {op("Softplus").build(1), [](double v) { return std::log1p(std::exp(v)); }, 17},
      {op("Sigmoid").build(1), [](double v) { return 1 / (1 + std::exp(-v)); }, 17},
      {op("Swish").build(1), [](double v) { return v / (1 + std::exp(-v)); }, 24},
      {op("Swish").f("alpha", 0.5f).build(1), [](double v) { return v / (1 + std::exp(-0.5 * v)); },
       24},
      {op("Elu").build(1), [](double v) { return v >= 0 ? v : std::exp(v) - 1; }, 17},
      {op("Selu").build(1),
       [](double v) {
         return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * (std::exp(v) - 1));
       },
       17},
      {op("LeakyRelu").build(1), [](double v) { return v >= 0 ? v : 0.01 * v; }, 17},
      {op("Erf").build(1), [](double v) { return std::erf(v); }, 17},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.node.op_type);
    std::vector<double> want;
    for (float v : x.span<float>()) want.push_back(c.f(v));
    expect_close(run1(c.node, {&x}, c.opset), want, x.shape(), 1e-5, 1e-6);
  }
}

// Sigmoid, Swish and tanh-Gelu run on exp_float() (exp.h) so that they vectorise: far into
// both tails (|x| up to 100, where exp overflows a float) they stay within 1e-6 of float64, and
// the infinities and NaN give what libm's formula gives.
TEST(Activation, SigmoidFamilyAcrossFloatRange) {
  std::mt19937 rng(6);
  const ir::Tensor x = random_tensor(rng, {1000}, -100.0f, 100.0f);
  static const double pi = 3.14159265358979323846;
  const std::pair<ir::Node, double (*)(double)> cases[] = {
      {op("Sigmoid").build(1), [](double v) { return 1 / (1 + std::exp(-v)); }},
      {op("Swish").build(1), [](double v) { return v / (1 + std::exp(-v)); }},
      {op("Gelu").s("approximate", "tanh").build(1),
       [](double v) {
         return 0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)));
       }},
  };
  for (const auto& [node, f] : cases) {
    SCOPED_TRACE(node.op_type);
    std::vector<double> want;
    for (float v : x.span<float>()) want.push_back(f(v));
    expect_close(run1(node, {&x}, node.op_type == "Swish" ? 24 : 20), want, x.shape(), 1e-5, 1e-6);
  }
  constexpr float inf = std::numeric_limits<float>::infinity();
  ir::Tensor ends = random_tensor(rng, {3}, 0.0f, 1.0f);
  ends.data<float>()[0] = inf;
  ends.data<float>()[1] = -inf;
  ends.data<float>()[2] = std::numeric_limits<float>::quiet_NaN();
  const auto y = run1(op("Sigmoid").build(1), {&ends}, 17);
  EXPECT_EQ(y.data<float>()[0], 1.0f);
  EXPECT_EQ(y.data<float>()[1], 0.0f);
  EXPECT_TRUE(std::isnan(y.data<float>()[2]));
}

// Erf's float32 kernel is a rational approximation (src/runtime/cpu/erf.h), not libm: over its
// whole range (a dense grid on [-10, 10], past where float's erf reaches +/-1, plus tiny
// values), within 5e-7 of float64 erf and 6e-7 relative; +/-inf give +/-1, NaN stays NaN.
// Gelu computes its erf the same way.
TEST(Activation, ErfMatchesFloat64AcrossItsRange) {
  std::vector<float> xs;
  for (int i = -200000; i <= 200000; ++i) xs.push_back(static_cast<float>(i) * 5e-5f);
  for (float v : {1e-30f, -1e-20f, 1e-8f, -3e-5f}) xs.push_back(v);
  const ir::Tensor x = ir::make_tensor<float>({static_cast<int64_t>(xs.size())}, xs);
  const ir::Tensor y = run1(op("Erf").build(1), {&x}, 17, 2);
  ASSERT_EQ(y.size(), x.size());
  double worst_abs = 0.0, worst_rel = 0.0;
  for (int64_t i = 0; i < x.size(); ++i) {
    const double want = std::erf(static_cast<double>(xs[static_cast<size_t>(i)]));
    const double err = std::abs(static_cast<double>(y.span<float>()[i]) - want);
    worst_abs = std::max(worst_abs, err);
    if (want != 0.0) worst_rel = std::max(worst_rel, err / std::abs(want));
  }
  EXPECT_LT(worst_abs, 5e-7);
  EXPECT_LT(worst_rel, 6e-7);
  const ir::Tensor special = ir::make_tensor<float>(
      {4}, {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
            std::numeric_limits<float>::quiet_NaN(), 0.0f});
  const ir::Tensor s = run1(op("Erf").build(1), {&special});
  EXPECT_EQ(s.span<float>()[0], 1.0f);
  EXPECT_EQ(s.span<float>()[1], -1.0f);
  EXPECT_TRUE(std::isnan(s.span<float>()[2]));
  EXPECT_EQ(s.span<float>()[3], 0.0f);
}

TEST(Activation, ClipBoundsFromAttributesOrInputs) {
  const ir::Tensor x = ir::make_tensor<float>({5}, {-3, -1, 0, 1, 3});
  // Opset 6: attributes.
  const ir::Tensor a = run1(op("Clip").f("min", -1.5f).f("max", 2.0f).build(1), {&x}, 6);
  expect_close(a, {-1.5, -1, 0, 1, 2}, {5});
  // Opset 13: optional inputs (max only).
  const ir::Tensor hi = ir::make_tensor<float>({}, {0.5f});
  const ir::Tensor b = run1(op("Clip").build(3), {&x, nullptr, &hi}, 13);
  expect_close(b, {-3, -1, 0, 0.5, 0.5}, {5});
  // Integers.
  const ir::Tensor xi = ir::make_tensor<int64_t>({3}, {-5, 2, 9});
  const ir::Tensor lo = ir::make_tensor<int64_t>({}, {0});
  const ir::Tensor c = run1(op("Clip").build(2), {&xi, &lo}, 13);
  expect_close(c, {0, 2, 9}, {3}, 0, 0);
}

TEST(Elementwise, PReluBroadcastsSlopePerChannel) {
  std::mt19937 rng(6);
  const ir::Tensor x = random_tensor(rng, {2, 3, 4, 4}, -2.0f, 2.0f);
  const ir::Tensor slope = random_tensor(rng, {3, 1, 1}, 0.0f, 0.5f);
  const auto want =
      naive_binary(x, slope, x.shape(), [](double v, double s) { return v < 0 ? s * v : v; });
  expect_close(run1(op("PRelu").build(2), {&x, &slope}), want, x.shape());
}

TEST(Cast, RoundTripsAndTruncates) {
  const ir::Tensor x = ir::make_tensor<float>({5}, {-2.7f, -0.5f, 0.0f, 1.5f, 1000.0f});
  const ir::Tensor i = run1(op("Cast").i("to", 7).build(1), {&x});
  ASSERT_EQ(i.dtype(), ir::DType::kInt64);
  expect_close(i, {-2, 0, 0, 1, 1000}, {5}, 0, 0);
  const ir::Tensor b = run1(op("Cast").i("to", 9).build(1), {&x});
  expect_close(b, {1, 1, 0, 1, 1}, {5}, 0, 0);
  // Expected values are NumPy's float16 / round-to-nearest-even bfloat16 of the inputs.
  const ir::Tensor h = run1(op("Cast").i("to", 10).build(1), {&x});
  expect_close(run1(op("Cast").i("to", 11).build(1), {&h}), {-2.69921875, -0.5, 0, 1.5, 1000}, {5},
               0, 0);
  const ir::Tensor bf = run1(op("Cast").i("to", 16).build(1), {&x});
  expect_close(run1(op("Cast").i("to", 1).build(1), {&bf}), {-2.703125, -0.5, 0, 1.5, 1000}, {5}, 0,
               0);
  // CastLike takes the target type from input 1.
  const ir::Tensor like = ir::make_tensor<int32_t>({1}, {0});
  EXPECT_EQ(run1(op("CastLike").build(2), {&x, &like}).dtype(), ir::DType::kInt32);
}

}  // namespace
}  // namespace ptq::test
