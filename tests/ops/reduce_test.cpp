// Reductions over random axis sets against naive float64 loops; the opset-dependent axes forms;
// ArgMax/ArgMin tie rules; TopK ordering and ties.
#include <fmt/ranges.h>

#include <cmath>

#include "op_test_util.h"

namespace ptq::test {
namespace {

// Naive reduction: f folds the values of each output cell, g finishes (value, count).
std::vector<double> naive_reduce(const ir::Tensor& x, const std::vector<bool>& red,
                                 double init, double (*f)(double, double),
                                 double (*g)(double, double)) {
  const ir::Shape& s = x.shape();
  ir::Shape out;
  for (size_t d = 0; d < s.size(); ++d) out.push_back(red[d] ? 1 : s[d]);
  std::vector<double> acc(static_cast<size_t>(ir::num_elements(out)), init);
  std::vector<double> count(acc.size(), 0);
  for (int64_t i = 0; i < x.size(); ++i) {
    auto idx = unravel(i, s);
    for (size_t d = 0; d < s.size(); ++d) {
      if (red[d]) idx[d] = 0;
    }
    const auto o = static_cast<size_t>(ravel(idx, out));
    acc[o] = f(acc[o], x.as_double(i));
    count[o] += 1;
  }
  for (size_t o = 0; o < acc.size(); ++o) acc[o] = g(acc[o], count[o]);
  return acc;
}

TEST(Reduce, RandomAxesMatchNaive) {
  std::mt19937 rng(41);
  const ir::Shape shape = {3, 4, 5, 2};
  const ir::Tensor x = random_tensor(rng, shape, 0.1f, 2.0f);
  struct Case {
    const char* op;
    double init;
    double (*f)(double, double);
    double (*g)(double, double);
  };
  const Case cases[] = {
      {"ReduceSum", 0, [](double a, double v) { return a + v; },
       [](double a, double) { return a; }},
      {"ReduceMean", 0, [](double a, double v) { return a + v; },
       [](double a, double n) { return a / n; }},
      {"ReduceMax", -1e300, [](double a, double v) { return std::max(a, v); },
       [](double a, double) { return a; }},
      {"ReduceMin", 1e300, [](double a, double v) { return std::min(a, v); },
       [](double a, double) { return a; }},
      {"ReduceL2", 0, [](double a, double v) { return a + v * v; },
       [](double a, double) { return std::sqrt(a); }},
      {"ReduceProd", 1, [](double a, double v) { return a * v; },
       [](double a, double) { return a; }},
      {"ReduceLogSumExp", 0, [](double a, double v) { return a + std::exp(v); },
       [](double a, double) { return std::log(a); }},
  };
  for (int mask = 1; mask < 16; ++mask) {
    std::vector<bool> red(4);
    std::vector<int64_t> axes;
    for (int d = 0; d < 4; ++d) {
      red[static_cast<size_t>(d)] = (mask >> d) & 1;
      if (red[static_cast<size_t>(d)]) axes.push_back(d % 2 ? d - 4 : d);  // mix negative axes
    }
    ir::Shape keep, drop;
    for (size_t d = 0; d < 4; ++d) {
      keep.push_back(red[d] ? 1 : shape[d]);
      if (!red[d]) drop.push_back(shape[d]);
    }
    const ir::Tensor axes_t = int64s(axes);
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} mask {}", c.op, mask));
      const auto want = naive_reduce(x, red, c.init, c.f, c.g);
      // Opset 13 attribute form (ReduceSum takes an input from 13), opset 18 input form.
      const bool sum = std::string(c.op) == "ReduceSum";
      const ir::Tensor a = sum ? run1(op(c.op).build(2), {&x, &axes_t}, 13)
                               : run1(op(c.op).ints("axes", axes).build(1), {&x}, 13);
      expect_close(a, want, keep, 1e-5, 1e-6);
      const ir::Tensor b = run1(op(c.op).i("keepdims", 0).build(2), {&x, &axes_t}, 18, 3);
      expect_close(b, want, drop, 1e-5, 1e-6);
    }
  }
}

// Reductions over consecutive middle axes with kept axes after them (a row of outputs summed
// at a time): against float64, and the same bits on 1 and 3 threads.
TEST(Reduce, MiddleAxesMatchNaiveOnAnyThreadCount) {
  std::mt19937 rng(42);
  const ir::Shape shape = {3, 16, 5, 24};
  const ir::Tensor x = random_tensor(rng, shape, -2.0f, 2.0f);
  const std::vector<std::vector<int64_t>> axes_sets = {{1}, {1, 2}, {2}, {0, 1}};
  for (const auto& axes : axes_sets) {
    std::vector<bool> red(4, false);
    for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
    ir::Shape keep;
    for (size_t d = 0; d < 4; ++d) keep.push_back(red[d] ? 1 : shape[d]);
    const ir::Tensor axes_t = int64s(axes);
    struct Case {
      const char* op;
      double (*f)(double, double);
      double (*g)(double, double);
    };
    const Case cases[] = {
        {"ReduceSum", [](double a, double v) { return a + v; }, [](double a, double) { return a; }},
        {"ReduceMean", [](double a, double v) { return a + v; },
         [](double a, double n) { return a / n; }},
        {"ReduceSumSquare", [](double a, double v) { return a + v * v; },
         [](double a, double) { return a; }},
        {"ReduceL2", [](double a, double v) { return a + v * v; },
         [](double a, double) { return std::sqrt(a); }},
    };
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("{} axes {}", c.op, fmt::join(axes, ",")));
      const ir::Tensor one = run1(op(c.op).build(2), {&x, &axes_t}, 18, 1);
      const ir::Tensor three = run1(op(c.op).build(2), {&x, &axes_t}, 18, 3);
      ASSERT_EQ(one.size(), three.size());
      for (int64_t i = 0; i < one.size(); ++i)
        ASSERT_EQ(one.span<float>()[i], three.span<float>()[i]);
      expect_close(one, naive_reduce(x, red, 0.0, c.f, c.g), keep, 1e-6, 1e-6);
    }
  }
}

TEST(Reduce, EmptyAxesReduceAllOrNoop) {
  const ir::Tensor x = ir::make_tensor<float>({2, 2}, {1, 2, 3, 4});
  expect_close(run1(op("ReduceMean").build(1), {&x}, 18), {2.5}, {1, 1});
  expect_close(run1(op("ReduceMean").i("keepdims", 0).build(1), {&x}, 13), {2.5}, {});
  const ir::Tensor empty = int64s({});
  const ir::Tensor y =
      run1(op("ReduceSum").i("noop_with_empty_axes", 1).build(2), {&x, &empty}, 13);
  expect_close(y, {1, 2, 3, 4}, {2, 2});
  const ir::Tensor xi = ir::make_tensor<int64_t>({3}, {4, -9, 7});
  expect_close(run1(op("ReduceMax").build(1), {&xi}, 13), {7}, {1}, 0, 0);
}

TEST(ArgMax, TiesPickFirstOrLastIndex) {
  const ir::Tensor x = ir::make_tensor<float>({2, 4}, {1, 5, 5, 0, 2, 2, 2, 2});
  expect_close(run1(op("ArgMax").i("axis", 1).build(1), {&x}), {1, 0}, {2, 1}, 0, 0);
  expect_close(
      run1(op("ArgMax").i("axis", -1).i("keepdims", 0).i("select_last_index", 1).build(1), {&x}),
      {2, 3}, {2}, 0, 0);
  expect_close(run1(op("ArgMin").i("axis", 1).i("select_last_index", 1).build(1), {&x}), {3, 3},
               {2, 1}, 0, 0);
  expect_close(run1(op("ArgMax").build(1), {&x}), {1, 0, 0, 1}, {1, 4}, 0, 0);
}

TEST(TopK, SortedWithStableTies) {
  const ir::Tensor x = ir::make_tensor<float>({2, 5}, {3, 1, 3, 2, 3, 0, 0, 1, 0, 1});
  const ir::Tensor k = int64s({3});
  auto r = run_op(op("TopK").build(2, 2), {&x, &k});
  ASSERT_TRUE(r.has_value()) << r.status().message();
  expect_close((*r)[0], {3, 3, 3, 1, 1, 0}, {2, 3}, 0, 0);
  expect_close((*r)[1], {0, 2, 4, 2, 4, 0}, {2, 3}, 0, 0);
  const ir::Tensor k1 = int64s({1});
  auto s = run_op(op("TopK").i("largest", 0).i("axis", 0).build(2, 2), {&x, &k1}, 11);
  ASSERT_TRUE(s.has_value());
  expect_close((*s)[0], {0, 0, 1, 0, 1}, {1, 5}, 0, 0);
  expect_close((*s)[1], {1, 1, 1, 1, 1}, {1, 5}, 0, 0);
}

TEST(TopK, RandomMatchesSortReference) {
  std::mt19937 rng(42);
  // Few distinct values so that ties are common.
  ir::Tensor x = random_int64(rng, {4, 9, 3}, 0, 4);
  const ir::Tensor xf = run1(op("Cast").i("to", 1).build(1), {&x});
  for (int largest = 0; largest < 2; ++largest) {
    const ir::Tensor k = int64s({5});
    auto r = run_op(op("TopK").i("axis", 1).i("largest", largest).build(2, 2), {&xf, &k}, 11, 2);
    ASSERT_TRUE(r.has_value());
    for (int64_t o = 0; o < 4; ++o) {
      for (int64_t i = 0; i < 3; ++i) {
        std::vector<std::pair<double, int64_t>> col;
        for (int64_t j = 0; j < 9; ++j) col.push_back({xf.as_double((o * 9 + j) * 3 + i), j});
        std::stable_sort(col.begin(), col.end(), [largest](auto a, auto b) {
          return largest ? a.first > b.first : a.first < b.first;
        });
        for (int64_t j = 0; j < 5; ++j) {
          const int64_t at = (o * 5 + j) * 3 + i;
          EXPECT_EQ((*r)[0].as_double(at), col[static_cast<size_t>(j)].first);
          EXPECT_EQ((*r)[1].as_int64(at), col[static_cast<size_t>(j)].second);
        }
      }
    }
  }
}

}  // namespace
}  // namespace ptq::test
