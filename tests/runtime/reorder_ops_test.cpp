// ReverseSequence, MaxUnpool and Unique: the operator examples worked by hand, Unique against
// std::map on random data, ReverseSequence bit-identical on 1, 2 and 3 threads.
#include <cmath>
#include <limits>
#include <map>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

template <typename T>
ir::Tensor tensor(ir::Shape shape, std::vector<T> v) {
  return ir::make_tensor<T>(std::move(shape), std::span<const T>(v));
}

template <typename T>
std::vector<T> values(const ir::Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

TEST(ReverseSequence, ReversesEachBatchUpToItsLength) {
  // [time 4, batch 2]: batch 0 reverses 3 steps, batch 1 all 4.
  const auto x = tensor<float>({4, 2}, {0, 10, 1, 11, 2, 12, 3, 13});
  const auto lens = tensor<int64_t>({2}, {3, 4});
  const auto out = run_kernel(make_node("ReverseSequence", 2, 1), 10, {&x, &lens}, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{2, 13, 1, 12, 0, 11, 3, 10}));
}

TEST(ReverseSequence, BatchFirstIsTheSameOnAnyThreads) {
  std::mt19937 rng(35);
  const ir::Tensor x = random_tensor(rng, {6, 50, 40});
  const auto lens = tensor<int64_t>({6}, {0, 1, 17, 50, 49, 3});
  const auto node = make_node("ReverseSequence", 2, 1,
                              {attr_int("batch_axis", 0), attr_int("time_axis", 1)});
  const auto one = run_kernel(node, 10, {&x, &lens}, true, 1);
  ASSERT_EQ(one.size(), 1u);
  // Batch 2 (length 17): step 0 holds step 16, step 17 its own.
  EXPECT_EQ(one[0].data<float>()[(2 * 50 + 0) * 40 + 5], x.data<float>()[(2 * 50 + 16) * 40 + 5]);
  EXPECT_EQ(one[0].data<float>()[(2 * 50 + 17) * 40], x.data<float>()[(2 * 50 + 17) * 40]);
  for (int threads : {2, 3}) {
    EXPECT_TRUE(bit_identical(one[0], run_kernel(node, 10, {&x, &lens}, true, threads)[0]));
  }
  const auto too_long = tensor<int64_t>({6}, {0, 1, 17, 51, 49, 3});
  EXPECT_NE(kernel_error(node, 10, {&x, &too_long}).find("sequence length 51 is outside [0, 50]"),
            std::string::npos);
}

TEST(MaxUnpool, ScattersIntoZerosAtTheIndices) {
  const auto x = tensor<float>({1, 1, 2, 2}, {5, 6, 7, 8});
  const auto idx = tensor<int64_t>({1, 1, 2, 2}, {5, 7, 13, 15});
  const auto node = make_node("MaxUnpool", 2, 1,
                              {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  const auto out = run_kernel(node, 11, {&x, &idx}, true);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape(), (ir::Shape{1, 1, 4, 4}));
  EXPECT_EQ(values<float>(out[0]),
            (std::vector<float>{0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}));
  const auto shape = tensor<int64_t>({4}, {1, 1, 5, 5});
  const auto wider = run_kernel(make_node("MaxUnpool", 3, 1, node.attributes), 11,
                                {&x, &idx, &shape}, true);
  ASSERT_EQ(wider.size(), 1u);
  EXPECT_EQ(wider[0].shape(), (ir::Shape{1, 1, 5, 5}));
  // Indices address the 4x4 unpooled plane; the 5x5 output pads it at the end (1 // 2 = 0
  // before): 7 at (3, 1) stays at (3, 1).
  EXPECT_EQ(wider[0].data<float>()[3 * 5 + 1], 7.0f);
  const auto bad = tensor<int64_t>({1, 1, 2, 2}, {5, 7, 13, 16});
  EXPECT_NE(kernel_error(node, 11, {&x, &bad}).find("index 16 is outside the output [1, 1, 4, 4]"),
            std::string::npos);
}

TEST(Unique, SortedAndInFirstOccurrenceOrder) {
  const auto x = tensor<float>({6}, {2, 1, 1, 3, 4, 3});
  for (int64_t sorted : {1, 0}) {
    const auto out = run_kernel(make_node("Unique", 1, 4, {attr_int("sorted", sorted)}), 11,
                                {&x}, true);
    ASSERT_EQ(out.size(), 4u);
    using F = std::vector<float>;
    using I = std::vector<int64_t>;
    EXPECT_EQ(values<float>(out[0]), sorted ? F({1, 2, 3, 4}) : F({2, 1, 3, 4}));
    EXPECT_EQ(values<int64_t>(out[1]), sorted ? I({1, 0, 3, 4}) : I({0, 1, 3, 4}));
    EXPECT_EQ(values<int64_t>(out[2]), sorted ? I({1, 0, 0, 2, 3, 2}) : I({0, 1, 1, 2, 3, 2}));
    EXPECT_EQ(values<int64_t>(out[3]), sorted ? I({2, 1, 2, 1}) : I({1, 2, 2, 1}));
  }
}

TEST(Unique, NaNsSortLastAsOneValue) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto x = tensor<float>({4}, {nan, 1, nan, 0});
  const auto out = run_kernel(make_node("Unique", 1, 4), 11, {&x}, true);
  ASSERT_EQ(out.size(), 4u);
  ASSERT_EQ(out[0].size(), 3);
  EXPECT_EQ(out[0].data<float>()[0], 0.0f);
  EXPECT_EQ(out[0].data<float>()[1], 1.0f);
  EXPECT_TRUE(std::isnan(out[0].data<float>()[2]));
  EXPECT_EQ(values<int64_t>(out[3]), (std::vector<int64_t>{1, 1, 2}));
}

TEST(Unique, SlicesAlongAnAxisMatchAMapOfColumns) {
  // [2, 30, 2] with small integers: many repeated columns along axis 1.
  std::mt19937 rng(36);
  std::uniform_int_distribution<int64_t> small(0, 1);
  std::vector<int64_t> v(120);
  for (int64_t& e : v) e = small(rng);
  const auto x = tensor<int64_t>({2, 30, 2}, v);
  std::map<std::vector<int64_t>, std::pair<int64_t, int64_t>> want;  // column -> first, count
  for (int64_t j = 0; j < 30; ++j) {
    std::vector<int64_t> col;
    for (int64_t o = 0; o < 2; ++o) {
      col.insert(col.end(), {v[(o * 30 + j) * 2], v[(o * 30 + j) * 2 + 1]});
    }
    auto [it, fresh] = want.try_emplace(col, j, 0);
    ++it->second.second;
  }
  const auto out = run_kernel(make_node("Unique", 1, 4, {attr_int("axis", -2)}), 11, {&x}, true);
  ASSERT_EQ(out.size(), 4u);
  ASSERT_EQ(out[0].shape(), (ir::Shape{2, static_cast<int64_t>(want.size()), 2}));
  int64_t k = 0;
  for (const auto& [col, first_count] : want) {
    EXPECT_EQ(out[1].as_int64(k), first_count.first);
    EXPECT_EQ(out[3].as_int64(k), first_count.second);
    EXPECT_EQ(out[0].as_int64(k * 2), col[0]);
    EXPECT_EQ(out[0].as_int64((static_cast<int64_t>(want.size()) + k) * 2 + 1), col[3]);
    ++k;
  }
}

}  // namespace
}  // namespace ptq::runtime::testing
