// Softmax/LogSoftmax, LayerNormalization, InstanceNormalization, BatchNormalization: against
// naive float64 computations written here, fast against reference, thread determinism.
#include <random>

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
              (x.data<float>()[3] - mean) / std::sqrt(var / 8.0 + 1e-5) * s8.data<float>()[3], 1e-5);
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
  const std::string e = kernel_error(
      make_node("BatchNormalization", 5, 1, {attr_int("training_mode", 1)}), 15, {&x, &s, &b, &m, &v});
  EXPECT_NE(e.find("training_mode"), std::string::npos) << e;
}

}  // namespace
}  // namespace ptq::runtime::testing
