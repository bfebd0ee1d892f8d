// Gemm and MatMul: Eigen kernels against the reference on random shapes, known answers,
// broadcasting and 1-D cases, thread determinism.
#include <random>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

TEST(Gemm, FastMatchesReferenceOnRandomShapes) {
  std::mt19937 rng(11);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 80; ++i) {
    const int64_t m = pick(1, 90), n = pick(1, 300), k = pick(1, 70);
    const bool ta = pick(0, 1), tb = pick(0, 1);
    const int c_kind = static_cast<int>(pick(0, 4));  // none, scalar, [n], [m, 1], [m, n]
    const float alpha = i % 3 == 0 ? 1.0f : 0.5f, beta = i % 4 == 0 ? 1.0f : -2.0f;
    const ir::Tensor a = random_tensor(rng, ta ? ir::Shape{k, m} : ir::Shape{m, k});
    const ir::Tensor b = random_tensor(rng, tb ? ir::Shape{n, k} : ir::Shape{k, n});
    const ir::Shape cs[] = {{}, {}, {n}, {m, 1}, {m, n}};
    const ir::Tensor c = random_tensor(rng, cs[c_kind]);
    std::vector<const ir::Tensor*> ins{&a, &b};
    if (c_kind > 0) ins.push_back(&c);
    const ir::Node node = make_node("Gemm", ins.size(), 1,
                                    {attr_int("transA", ta), attr_int("transB", tb),
                                     attr_float("alpha", alpha), attr_float("beta", beta)});
    auto ref = run_kernel(node, 13, ins, true);
    auto fast = run_kernel(node, 13, ins, false, 2);
    ASSERT_EQ(fast.size(), 1u);
    EXPECT_EQ(fast[0].shape(), (ir::Shape{m, n}));
    EXPECT_LE(rel_l2(fast[0], ref[0]), 1e-5) << "m " << m << " n " << n << " k " << k;
  }
}

TEST(Gemm, KnownAnswer) {
  const ir::Tensor a = ir::make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const ir::Tensor b = ir::make_tensor<float>({2, 3}, {1, 0, 1, 0, 1, 0});  // used transposed
  const ir::Tensor c = ir::make_tensor<float>({2}, {10, 20});
  for (bool reference : {true, false}) {
    auto y = run_kernel(make_node("Gemm", 3, 1, {attr_int("transB", 1), attr_float("alpha", 2.0f),
                                                 attr_float("beta", 0.5f)}),
                        13, {&a, &b, &c}, reference);
    ASSERT_EQ(y[0].shape(), (ir::Shape{2, 2}));
    // A * B^T = [[4, 2], [10, 5]]; 2 * that + 0.5 * [10, 20].
    const float want[4] = {13, 14, 25, 20};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y[0].data<float>()[i], want[i]);
  }
}

TEST(MatMul, FastMatchesReferenceWithBroadcastAndVectors) {
  std::mt19937 rng(12);
  const std::vector<std::pair<ir::Shape, ir::Shape>> cases{
      {{5}, {5}},           {{5}, {5, 7}},          {{3, 5}, {5}},        {{4, 3, 5}, {5}},
      {{5}, {2, 5, 3}},     {{2, 1, 3, 4}, {5, 4, 6}}, {{8, 33, 64}, {64, 100}},
      {{2, 3, 17, 9}, {2, 3, 9, 31}}, {{1, 70, 40}, {3, 40, 300}}, {{0, 4}, {4, 3}},
      {{2, 260, 65}, {65, 300}}};
  for (const auto& [as, bs] : cases) {
    const ir::Tensor a = random_tensor(rng, as), b = random_tensor(rng, bs);
    const ir::Node node = make_node("MatMul", 2, 1);
    auto ref = run_kernel(node, 13, {&a, &b}, true);
    auto fast = run_kernel(node, 13, {&a, &b}, false, 2);
    ASSERT_EQ(fast.size(), 1u);
    EXPECT_EQ(fast[0].shape(), ref[0].shape());
    EXPECT_LE(rel_l2(fast[0], ref[0]), 1e-5) << ir::shape_str(as) << " x " << ir::shape_str(bs);
    auto three = run_kernel(node, 13, {&a, &b}, false, 3);
    auto one = run_kernel(node, 13, {&a, &b}, false, 1);
    EXPECT_TRUE(bit_identical(one[0], three[0])) << ir::shape_str(as) << " x " << ir::shape_str(bs);
  }
}

TEST(MatMul, OutputShapesFollowNumpy) {
  std::mt19937 rng(13);
  const std::vector<std::tuple<ir::Shape, ir::Shape, ir::Shape>> cases{
      {{5}, {5}, {}},
      {{5}, {5, 7}, {7}},
      {{3, 5}, {5}, {3}},
      {{2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6}},
  };
  for (const auto& [as, bs, want] : cases) {
    const ir::Tensor a = random_tensor(rng, as), b = random_tensor(rng, bs);
    auto y = run_kernel(make_node("MatMul", 2, 1), 13, {&a, &b}, false);
    EXPECT_EQ(y[0].shape(), want);
  }
  // Independent check of one broadcast element: y[1, 3, 2, 5] = sum_k a[1, 0, 2, k] b[3, k, 5].
  const ir::Tensor a = random_tensor(rng, {2, 1, 3, 4}), b = random_tensor(rng, {5, 4, 6});
  auto y = run_kernel(make_node("MatMul", 2, 1), 13, {&a, &b}, false);
  double want = 0.0;
  for (int k = 0; k < 4; ++k) {
    want += double(a.data<float>()[(1 * 3 + 2) * 4 + k]) * b.data<float>()[(3 * 4 + k) * 6 + 5];
  }
  EXPECT_NEAR(y[0].data<float>()[((1 * 5 + 3) * 3 + 2) * 6 + 5], want, 1e-5);
}

TEST(MatMul, RejectsMismatchedInnerDims) {
  const ir::Tensor a(ir::DType::kFloat32, {2, 3}), b(ir::DType::kFloat32, {4, 5});
  const std::string e = kernel_error(make_node("MatMul", 2, 1), 13, {&a, &b});
  EXPECT_NE(e.find("[2, 3]"), std::string::npos) << e;
  EXPECT_NE(e.find("[4, 5]"), std::string::npos) << e;
}

TEST(MatMul, IntegerTypes) {
  const ir::Tensor a = ir::make_tensor<int64_t>({2, 2}, {1, 2, 3, 4});
  const ir::Tensor b = ir::make_tensor<int64_t>({2, 1}, {5, 6});
  auto y = run_kernel(make_node("MatMul", 2, 1), 13, {&a, &b}, false);
  ASSERT_EQ(y[0].dtype(), ir::DType::kInt64);
  EXPECT_EQ(y[0].data<int64_t>()[0], 17);
  EXPECT_EQ(y[0].data<int64_t>()[1], 39);
}

}  // namespace
}  // namespace ptq::runtime::testing
