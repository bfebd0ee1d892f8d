// Softmax/LogSoftmax, LayerNormalization, InstanceNormalization, BatchNormalization: against
// naive float64 computations written here, fast against reference, thread determinism; the
// float32 exp that Softmax's fast path uses, against float64.
#include <bit>
#include <limits>
#include <random>

#include "exp.h"
#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

// Softmax over `d` values at stride `inner` from `base`, in double.
void naive_softmax(const float* x, int64_t base, int64_t d, int64_t inner, bool log,
                   std::vector<double>& out) {
  double mx = -INFINITY, sum = 0.0;
  for (int64_t j = 0; j < d; ++j) mx = std::max(mx, double(x[base + j * inner]));
  for (int64_t j = 0; j < d; ++j) sum += std::exp(double(x[base + j * inner]) - mx);
  for (int64_t j = 0; j < d; ++j) {
    const double v = double(x[base + j * inner]) - mx;
    out[base + j * inner] = log ? v - std::log(sum) : std::exp(v) / sum;
  }
}

TEST(Softmax, Opset13NormalisesOneAxisOpset11FlattensFromAxis) {
  std::mt19937 rng(31);
  const ir::Tensor x = random_tensor(rng, {2, 3, 4}, -4.0f, 4.0f);
  for (bool log : {false, true}) {
    const char* op = log ? "LogSoftmax" : "Softmax";
    for (bool reference : {true, false}) {
      // opset 13, axis 1: each (i, k) column of 3 values.
      auto y13 = run_kernel(make_node(op, 1, 1, {attr_int("axis", 1)}), 13, {&x}, reference, 2);
      std::vector<double> want(24);
      for (int64_t i = 0; i < 2; ++i) {
        for (int64_t k = 0; k < 4; ++k) naive_softmax(x.data<float>(), i * 12 + k, 3, 4, log, want);
      }
      for (int64_t e = 0; e < 24; ++e) EXPECT_NEAR(y13[0].data<float>()[e], want[e], 1e-6) << e;
      // opset 11, axis 1: each batch row of 12 values.
      auto y11 = run_kernel(make_node(op, 1, 1, {attr_int("axis", 1)}), 11, {&x}, reference, 2);
      for (int64_t i = 0; i < 2; ++i) naive_softmax(x.data<float>(), i * 12, 12, 1, log, want);
      for (int64_t e = 0; e < 24; ++e) EXPECT_NEAR(y11[0].data<float>()[e], want[e], 1e-6) << e;
    }
    // Default axes: -1 at opset 13 (rows of 4), 1 at opset 11 (rows of 12).
    auto d13 = run_kernel(make_node(op, 1, 1), 13, {&x}, false);
    auto d11 = run_kernel(make_node(op, 1, 1), 11, {&x}, false);
    std::vector<double> want(24);
    for (int64_t r = 0; r < 6; ++r) naive_softmax(x.data<float>(), r * 4, 4, 1, log, want);
    for (int64_t e = 0; e < 24; ++e) EXPECT_NEAR(d13[0].data<float>()[e], want[e], 1e-6);
    for (int64_t i = 0; i < 2; ++i) naive_softmax(x.data<float>(), i * 12, 12, 1, log, want);
    for (int64_t e = 0; e < 24; ++e) EXPECT_NEAR(d11[0].data<float>()[e], want[e], 1e-6);
  }
}

TEST(Softmax, LargeValuesStayFiniteAndThreadsAgree) {
  std::mt19937 rng(32);
  const ir::Tensor x = random_tensor(rng, {64, 1000}, -500.0f, 500.0f);
  auto one = run_kernel(make_node("Softmax", 1, 1), 13, {&x}, false, 1);
  auto three = run_kernel(make_node("Softmax", 1, 1), 13, {&x}, false, 3);
  auto ref = run_kernel(make_node("Softmax", 1, 1), 13, {&x}, true);
  EXPECT_TRUE(bit_identical(one[0], three[0]));
  EXPECT_LE(rel_l2(one[0], ref[0]), 1e-5);
  for (float v : one[0].span<float>()) ASSERT_TRUE(std::isfinite(v));
}

// exp_float() (exp.h): within 2 float ulps (1.0 measured) of float64 exp over the range where exp
// is a normal float (a dense grid plus the ends), 0 below it, +inf above it, NaN stays NaN.
TEST(ExpFloat, WithinTwoUlpsOfFloat64) {
  std::vector<float> xs;
  for (int i = -873365; i <= 887228; ++i) xs.push_back(static_cast<float>(i) * 1e-4f);
  for (float v : {-87.3365f, 88.7228f, 1e-30f, -1e-30f, 0.0f, -0.0f}) xs.push_back(v);
  double worst = 0.0;
  for (float v : xs) {
    const double want = std::exp(static_cast<double>(v));
    const float got = cpu::exp_float(v);
    const double ulp =
        std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    worst = std::max(worst, std::abs(static_cast<double>(got) - want) / ulp);
  }
  EXPECT_LE(worst, 2.0);
  EXPECT_EQ(cpu::exp_float(0.0f), 1.0f);
  EXPECT_EQ(cpu::exp_float(-90.0f), 0.0f);
  EXPECT_EQ(cpu::exp_float(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(cpu::exp_float(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(cpu::exp_float(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(cpu::exp_float(std::numeric_limits<float>::quiet_NaN())));
}

// Softmax rows of many lengths (tails of the 16-lane sums included), contiguous and strided:
// the fast path against float64, and the same bits on 1 and 3 threads.
TEST(Softmax, FastRowsOfAnyLengthMatchNaive) {
  std::mt19937 rng(33);
  for (int64_t d : {1, 5, 16, 17, 40, 100}) {
    for (bool log : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "d " << d << " log " << log);
      const ir::Tensor x = random_tensor(rng, {3, d, 4}, -8.0f, 8.0f);
      const char* op = log ? "LogSoftmax" : "Softmax";
      for (int64_t axis : {1, 2}) {
        const ir::Node node = make_node(op, 1, 1, {attr_int("axis", axis)});
        auto one = run_kernel(node, 13, {&x}, false, 1);
        auto three = run_kernel(node, 13, {&x}, false, 3);
        EXPECT_TRUE(bit_identical(one[0], three[0]));
        std::vector<double> want(static_cast<size_t>(x.size()));
        const int64_t rows = axis == 1 ? 3 * 4 : 3 * d, len = axis == 1 ? d : 4;
        for (int64_t t = 0; t < rows; ++t) {
          const int64_t base = axis == 1 ? (t / 4) * d * 4 + t % 4 : t * 4;
          naive_softmax(x.data<float>(), base, len, axis == 1 ? 4 : 1, log, want);
        }
        for (int64_t e = 0; e < x.size(); ++e) {
          EXPECT_NEAR(one[0].data<float>()[e], want[e], 2e-6 * std::max(1.0, std::abs(want[e])));
        }
      }
    }
  }
}

// The float32 fast path (scale and bias per column) against the reference kernel on random
// rows of several lengths (8-lane tails included), with the mean and inverse deviation outputs
// and a large common offset (no cancellation), and the same bits on 1 and 3 threads.
TEST(LayerNormalization, FastPathMatchesReference) {
  std::mt19937 rng(44);
  for (int64_t d : {1, 7, 8, 64, 77}) {
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(::testing::Message() << "d " << d << " bias " << with_bias);
      ir::Tensor x = random_tensor(rng, {5, 6, d}, -3.0f, 3.0f);
      for (float& v : x.span<float>()) v += 1000.0f;
      const ir::Tensor scale = random_tensor(rng, {d}), bias = random_tensor(rng, {d});
      std::vector<const ir::Tensor*> in = {&x, &scale};
      if (with_bias) in.push_back(&bias);
      const ir::Node node = make_node("LayerNormalization", static_cast<int>(in.size()), 3);
      auto ref = run_kernel(node, 17, in, true);
      auto one = run_kernel(node, 17, in, false, 1);
      auto three = run_kernel(node, 17, in, false, 3);
      ASSERT_EQ(one.size(), 3u);
      for (size_t o = 0; o < 3; ++o) {
        EXPECT_TRUE(bit_identical(one[o], three[o])) << o;
        EXPECT_LE(rel_l2(one[o], ref[o]), 2e-7) << o;
      }
      for (int64_t e = 0; e < x.size(); ++e) {
        EXPECT_NEAR(one[0].data<float>()[e], ref[0].data<float>()[e], 2e-5) << e;
      }
    }
  }
}

TEST(LayerNormalization, MatchesNaiveWithStatsOutputs) {
  std::mt19937 rng(41);
  const ir::Tensor x = random_tensor(rng, {3, 5, 8}, -3.0f, 5.0f);
  const ir::Tensor scale = random_tensor(rng, {5, 8}), bias = random_tensor(rng, {8});
  auto y = run_kernel(make_node("LayerNormalization", 3, 3,
                                {attr_int("axis", -2), attr_float("epsilon", 1e-3f)}),
                      17, {&x, &scale, &bias}, false, 2);
  ASSERT_EQ(y.size(), 3u);
  ASSERT_EQ(y[1].shape(), (ir::Shape{3, 1, 1}));
  ASSERT_EQ(y[2].shape(), (ir::Shape{3, 1, 1}));
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t j = 0; j < 40; ++j) mean += x.data<float>()[r * 40 + j];
    mean /= 40.0;
    for (int64_t j = 0; j < 40; ++j) var += std::pow(x.data<float>()[r * 40 + j] - mean, 2);
    const double inv = 1.0 / std::sqrt(var / 40.0 + 1e-3);
    EXPECT_NEAR(y[1].data<float>()[r], mean, 1e-6);
    EXPECT_NEAR(y[2].data<float>()[r], inv, 1e-5);
    for (int64_t j = 0; j < 40; ++j) {
      const double want = (x.data<float>()[r * 40 + j] - mean) * inv * scale.data<float>()[j] +
                          bias.data<float>()[j % 8];
      EXPECT_NEAR(y[0].data<float>()[r * 40 + j], want, 1e-5);
    }
  }
  // Without bias and with the default axis.
  const ir::Tensor s8 = random_tensor(rng, {8});
  auto z = run_kernel(make_node("LayerNormalization", 2, 1), 17, {&x, &s8}, false);
  double mean = 0.0, var = 0.0;
  for (int j = 0; j < 8; ++j) mean += x.data<float>()[j];
  mean /= 8.0;
  for (int j = 0; j < 8; ++j) var += std::pow(x.data<float>()[j] - mean, 2);
  EXPECT_NEAR(z[0].data<float>()[3],
              (x.data<float>()[3] - mean) / std::sqrt(var / 8.0 + 1e-5) * s8.data<float>()[3],
              1e-5);
}

TEST(InstanceNormalization, MatchesNaive) {
  std::mt19937 rng(42);
  const ir::Tensor x = random_tensor(rng, {2, 3, 4, 5}), s = random_tensor(rng, {3}),
                   b = random_tensor(rng, {3});
  auto y = run_kernel(make_node("InstanceNormalization", 3, 1), 11, {&x, &s, &b}, false, 3);
  for (int64_t p = 0; p < 6; ++p) {
    double mean = 0.0, var = 0.0;
    for (int j = 0; j < 20; ++j) mean += x.data<float>()[p * 20 + j];
    mean /= 20.0;
    for (int j = 0; j < 20; ++j) var += std::pow(x.data<float>()[p * 20 + j] - mean, 2);
    for (int j = 0; j < 20; ++j) {
      const double want = (x.data<float>()[p * 20 + j] - mean) / std::sqrt(var / 20.0 + 1e-5) *
                              s.data<float>()[p % 3] + b.data<float>()[p % 3];
      EXPECT_NEAR(y[0].data<float>()[p * 20 + j], want, 1e-5);
    }
  }
}

TEST(BatchNormalization, FastMatchesReferenceAndNaive) {
  std::mt19937 rng(43);
  const ir::Tensor x = random_tensor(rng, {2, 4, 3, 3}), s = random_tensor(rng, {4}),
                   b = random_tensor(rng, {4}), m = random_tensor(rng, {4}),
                   v = random_tensor(rng, {4}, 0.1f, 2.0f);
  const ir::Node node = make_node("BatchNormalization", 5, 1, {attr_float("epsilon", 1e-3f)});
  auto fast = run_kernel(node, 15, {&x, &s, &b, &m, &v}, false, 2);
  auto ref = run_kernel(node, 15, {&x, &s, &b, &m, &v}, true);
  EXPECT_LE(rel_l2(fast[0], ref[0]), 1e-6);
  const int64_t at = (1 * 4 + 2) * 9 + 4;
  const double want = s.data<float>()[2] * (x.data<float>()[at] - m.data<float>()[2]) /
                          std::sqrt(v.data<float>()[2] + 1e-3) + b.data<float>()[2];
  EXPECT_NEAR(fast[0].data<float>()[at], want, 1e-5);
  const std::string e =
      kernel_error(make_node("BatchNormalization", 5, 1, {attr_int("training_mode", 1)}), 15,
                   {&x, &s, &b, &m, &v});
  EXPECT_NE(e.find("training_mode"), std::string::npos) << e;
}

}  // namespace
}  // namespace ptq::runtime::testing
