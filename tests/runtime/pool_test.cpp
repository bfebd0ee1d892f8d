// Pooling: fast 2-D kernels against the reference, ONNX's known answers (ceil_mode, pads,
// count_include_pad, Indices), global pooling, thread determinism.
#include <random>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

TEST(Pool, FastMatchesReferenceOnRandomShapes) {
  std::mt19937 rng(21);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 120; ++i) {
    const bool is_max = i % 2 == 0;
    const std::vector<int64_t> k{pick(1, 4), pick(1, 4)}, s{pick(1, 3), pick(1, 3)},
        d{is_max ? pick(1, 2) : 1, is_max ? pick(1, 2) : 1};
    std::vector<int64_t> pads(4);
    for (size_t j = 0; j < 4; ++j) pads[j] = pick(0, k[j % 2] - 1);
    const ir::Tensor x = random_tensor(
        rng,
        {pick(1, 2), pick(1, 3), pick(1, 12) + (k[0] - 1) * d[0], pick(1, 12) + (k[1] - 1) * d[1]});
    std::vector<ir::Attribute> attrs{attr_ints("kernel_shape", k), attr_ints("strides", s),
                                     attr_int("ceil_mode", pick(0, 1)),
                                     attr_int("count_include_pad", pick(0, 1))};
    if (is_max) attrs.push_back(attr_ints("dilations", d));
    if (i % 7 == 3) {
      attrs.push_back(attr_string("auto_pad", i % 2 ? "SAME_UPPER" : "SAME_LOWER"));
    } else {
      attrs.push_back(attr_ints("pads", pads));
    }
    const ir::Node node = make_node(is_max ? "MaxPool" : "AveragePool", 1, 1, attrs);
    auto ref = run_kernel(node, 19, {&x}, true);
    auto fast = run_kernel(node, 19, {&x}, false, 2);
    ASSERT_EQ(fast.size(), 1u) << i;
    EXPECT_LE(rel_l2(fast[0], ref[0]), 1e-6) << "case " << i;
    auto one = run_kernel(node, 19, {&x}, false, 1);
    EXPECT_TRUE(bit_identical(one[0], fast[0])) << "case " << i;
  }
}

ir::Tensor iota(ir::Shape shape) {
  ir::Tensor t(ir::DType::kFloat32, std::move(shape));
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>(i + 1);
  return t;
}

TEST(Pool, KnownAnswers) {
  const ir::Tensor x = iota({1, 1, 4, 4});  // 1..16
  for (bool reference : {true, false}) {
    // test_maxpool_2d_ceil: kernel 3, stride 2, ceil_mode -> [[11, 12], [15, 16]].
    auto y = run_kernel(make_node("MaxPool", 1, 1, {attr_ints("kernel_shape", {3, 3}),
                                                    attr_ints("strides", {2, 2}),
                                                    attr_int("ceil_mode", 1)}),
                        12, {&x}, reference);
    ASSERT_EQ(y[0].shape(), (ir::Shape{1, 1, 2, 2}));
    const float want_max[4] = {11, 12, 15, 16};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y[0].data<float>()[i], want_max[i]);
    // 3x3 average with pads 1: corner = (1+2+5+6)/4 excluding pads, /9 including them.
    for (int include : {0, 1}) {
      auto a = run_kernel(make_node("AveragePool", 1, 1, {attr_ints("kernel_shape", {3, 3}),
                                                          attr_ints("pads", {1, 1, 1, 1}),
                                                          attr_int("count_include_pad", include)}),
                          11, {&x}, reference);
      ASSERT_EQ(a[0].shape(), (ir::Shape{1, 1, 4, 4}));
      EXPECT_FLOAT_EQ(a[0].data<float>()[0], include ? 14.0f / 9.0f : 14.0f / 4.0f);
      EXPECT_FLOAT_EQ(a[0].data<float>()[5], (1 + 2 + 3 + 5 + 6 + 7 + 9 + 10 + 11) / 9.0f);
    }
  }
  // ceil_mode drops a window that would start in the end padding (ONNX 1.16 reference rule):
  // in 5, kernel 2, stride 2, no pads -> ceil((5 - 2) / 2) + 1 = 3 windows, the last at 4.
  const ir::Tensor x5 = iota({1, 1, 1, 5});
  auto c = run_kernel(make_node("MaxPool", 1, 1, {attr_ints("kernel_shape", {1, 2}),
                                                  attr_ints("strides", {1, 2}),
                                                  attr_int("ceil_mode", 1)}),
                      12, {&x5}, false);
  ASSERT_EQ(c[0].shape(), (ir::Shape{1, 1, 1, 3}));
  EXPECT_EQ(c[0].data<float>()[2], 5.0f);
  // ...and with pads 1 on both sides: windows start at -1, 1, 3; a fourth would start at 5,
  // beyond the input, and is dropped: ceil((5 + 2 - 2) / 2) + 1 = 4 becomes 3.
  auto d = run_kernel(make_node("MaxPool", 1, 1, {attr_ints("kernel_shape", {1, 2}),
                                                  attr_ints("strides", {1, 2}),
                                                  attr_ints("pads", {0, 1, 0, 1}),
                                                  attr_int("ceil_mode", 1)}),
                      12, {&x5}, false);
  ASSERT_EQ(d[0].shape(), (ir::Shape{1, 1, 1, 3}));
  const float want_d[3] = {1, 3, 5};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(d[0].data<float>()[i], want_d[i]);
}

TEST(MaxPool, IndicesRowAndColumnMajor) {
  // test_maxpool_with_argmax_2d_precomputed_strides: 5x5 of 1..25, kernel 2, stride 2.
  const ir::Tensor x = iota({1, 1, 5, 5});
  for (int order : {0, 1}) {
    auto y = run_kernel(make_node("MaxPool", 1, 2, {attr_ints("kernel_shape", {2, 2}),
                                                    attr_ints("strides", {2, 2}),
                                                    attr_int("storage_order", order)}),
                        12, {&x}, false);
    ASSERT_EQ(y.size(), 2u);
    ASSERT_EQ(y[1].dtype(), ir::DType::kInt64);
    const float want_y[4] = {7, 9, 17, 19};
    const int64_t want_row[4] = {6, 8, 16, 18}, want_col[4] = {6, 16, 8, 18};
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(y[0].data<float>()[i], want_y[i]);
      EXPECT_EQ(y[1].data<int64_t>()[i], order ? want_col[i] : want_row[i]) << i;
    }
  }
  // Indices count the batch and channel offset too.
  const ir::Tensor x2 = iota({2, 1, 2, 2});
  auto y =
      run_kernel(make_node("MaxPool", 1, 2, {attr_ints("kernel_shape", {2, 2})}), 12, {&x2}, false);
  EXPECT_EQ(y[1].data<int64_t>()[0], 3);
  EXPECT_EQ(y[1].data<int64_t>()[1], 7);
}

TEST(Pool, ThreeDimensionalAverageMatchesHandComputation) {
  const ir::Tensor x = iota({1, 1, 2, 2, 2});
  auto y = run_kernel(make_node("AveragePool", 1, 1, {attr_ints("kernel_shape", {2, 2, 2})}), 11,
                      {&x}, false);
  ASSERT_EQ(y[0].shape(), (ir::Shape{1, 1, 1, 1, 1}));
  EXPECT_FLOAT_EQ(y[0].data<float>()[0], 4.5f);
}

TEST(GlobalPool, AverageAndMax) {
  std::mt19937 rng(3);
  const ir::Tensor x = random_tensor(rng, {2, 3, 5, 7});
  auto avg = run_kernel(make_node("GlobalAveragePool", 1, 1), 13, {&x}, false, 2);
  auto mx = run_kernel(make_node("GlobalMaxPool", 1, 1), 13, {&x}, false, 2);
  ASSERT_EQ(avg[0].shape(), (ir::Shape{2, 3, 1, 1}));
  for (int p = 0; p < 6; ++p) {
    double sum = 0.0;
    float best = -INFINITY;
    for (int j = 0; j < 35; ++j) {
      sum += x.data<float>()[p * 35 + j];
      best = std::max(best, x.data<float>()[p * 35 + j]);
    }
    EXPECT_NEAR(avg[0].data<float>()[p], sum / 35.0, 1e-6);
    EXPECT_EQ(mx[0].data<float>()[p], best);
  }
}

}  // namespace
}  // namespace ptq::runtime::testing
