// Data-movement kernels against naive index arithmetic: Slice (negative steps, clamping),
// Transpose, Concat/Split (every opset form), Tile, Expand, Pad (modes, axes), and the view
// contract of Reshape/Flatten/Squeeze/Unsqueeze/Identity.
#include "op_test_util.h"

namespace ptq::test {
namespace {

ir::Tensor iota(const ir::Shape& shape) {
  ir::Tensor t(ir::DType::kFloat32, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}

// The indices ONNX's Slice visits on one axis, by the spec's words: negative values count from
// the end; then start clamps to [0, dim] ([0, dim - 1] when stepping back) and end to [0, dim]
// ([-1, dim - 1] when stepping back). This differs from Python slicing only when a start lies
// before the first element with a negative step (Python: empty; ONNX: starts at 0).
std::vector<int64_t> onnx_slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
  std::vector<int64_t> r;
  for (int64_t i = start; step > 0 ? i < end : i > end; i += step) r.push_back(i);
  return r;
}

TEST(Slice, RandomStartsEndsStepsMatchSpec) {
  std::mt19937 rng(11);
  const ir::Shape shape = {5, 7, 6};
  const ir::Tensor x = iota(shape);
  std::uniform_int_distribution<int64_t> pos(-9, 9), stp(-3, 3), pick(0, 2);
  for (int trial = 0; trial < 200; ++trial) {
    // One or two sliced axes, given with negative or positive numbers.
    std::vector<int64_t> starts, ends, axes, steps;
    for (int64_t a = 0; a < 3; ++a) {
      if (pick(rng) == 0) continue;
      int64_t st = 0;
      while (st == 0) st = stp(rng);
      starts.push_back(pos(rng));
      ends.push_back(pick(rng) == 0 ? (st > 0 ? INT64_MAX : INT64_MIN) : pos(rng));
      axes.push_back(pick(rng) == 0 ? a - 3 : a);
      steps.push_back(st);
    }
    if (starts.empty()) continue;
    std::vector<std::vector<int64_t>> picks(3);
    for (size_t d = 0; d < 3; ++d) {
      for (int64_t i = 0; i < shape[d]; ++i) picks[d].push_back(i);
    }
    for (size_t k = 0; k < axes.size(); ++k) {
      const auto d = static_cast<size_t>(axes[k] < 0 ? axes[k] + 3 : axes[k]);
      picks[d] = onnx_slice(shape[d], starts[k], ends[k], steps[k]);
    }
    const ir::Shape out = {static_cast<int64_t>(picks[0].size()),
                           static_cast<int64_t>(picks[1].size()),
                           static_cast<int64_t>(picks[2].size())};
    std::vector<double> want;
    for (int64_t i : picks[0]) {
      for (int64_t j : picks[1]) {
        for (int64_t k : picks[2]) want.push_back(static_cast<double>((i * 7 + j) * 6 + k));
      }
    }
    const ir::Tensor s = int64s(starts), e = int64s(ends), a = int64s(axes), st = int64s(steps);
    SCOPED_TRACE(trial);
    expect_close(run1(op("Slice").build(5), {&x, &s, &e, &a, &st}), want, out, 0, 0);
  }
}

TEST(Slice, AttributeFormBeforeOpset10) {
  const ir::Tensor x = iota({4, 5});
  const ir::Tensor y = run1(
      op("Slice").ints("starts", {1, -3}).ints("ends", {1000, -1}).ints("axes", {0, 1}).build(1),
      {&x}, 9);
  expect_close(y, {7, 8, 12, 13, 17, 18}, {3, 2}, 0, 0);
}

TEST(Transpose, RandomPermutationsMatchNaive) {
  std::mt19937 rng(12);
  const ir::Shape shape = {2, 3, 4, 5};
  const ir::Tensor x = random_tensor(rng, shape, -2.0f, 2.0f);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    ir::Shape out(4);
    for (size_t i = 0; i < 4; ++i) out[i] = shape[static_cast<size_t>(perm[i])];
    std::vector<double> want(static_cast<size_t>(x.size()));
    for (int64_t o = 0; o < x.size(); ++o) {
      const auto oi = unravel(o, out);
      std::vector<int64_t> ii(4);
      for (size_t i = 0; i < 4; ++i) ii[static_cast<size_t>(perm[i])] = oi[i];
      want[static_cast<size_t>(o)] = x.as_double(ravel(ii, shape));
    }
    expect_close(run1(op("Transpose").ints("perm", perm).build(1), {&x}, 17, 3), want, out, 0, 0);
  } while (std::next_permutation(perm.begin(), perm.end()));
  // Default: reversed axes.
  EXPECT_EQ(run1(op("Transpose").build(1), {&x}).shape(), (ir::Shape{5, 4, 3, 2}));
}

TEST(ConcatSplit, SplitForms) {
  const ir::Tensor x = iota({2, 7});
  // Opset 18 num_outputs: chunks of ceil(7/3) = 3, the last smaller.
  auto r = run_op(op("Split").i("axis", 1).i("num_outputs", 3).build(1, 3), {&x}, 18);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ((*r)[0].shape(), (ir::Shape{2, 3}));
  EXPECT_EQ((*r)[2].shape(), (ir::Shape{2, 1}));
  expect_close((*r)[2], {6, 13}, {2, 1}, 0, 0);
  // Opset 13 input form and opset 11 attribute form agree.
  const ir::Tensor sizes = int64s({2, 5});
  auto a = run_op(op("Split").i("axis", -1).build(2, 2), {&x, &sizes}, 13);
  auto b = run_op(op("Split").i("axis", -1).ints("split", {2, 5}).build(1, 2), {&x}, 11);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_TRUE(same_bytes((*a)[1], (*b)[1]));
  expect_close((*a)[0], {0, 1, 7, 8}, {2, 2}, 0, 0);
  // Equal parts must divide before opset 18.
  EXPECT_FALSE(run_op(op("Split").i("axis", 1).build(1, 2), {&x}, 13).has_value());
  // Concat inverts Split.
  const ir::Tensor c = run1(op("Concat").i("axis", 1).build(2), {&(*a)[0], &(*a)[1]});
  EXPECT_TRUE(same_bytes(c, x));
}

TEST(TileExpand, MatchNaive) {
  const ir::Tensor x = iota({2, 3});
  const ir::Tensor reps = int64s({2, 2});
  const ir::Tensor t = run1(op("Tile").build(2), {&x, &reps});
  std::vector<double> want;
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 6; ++j) want.push_back(static_cast<double>((i % 2) * 3 + j % 3));
  }
  expect_close(t, want, {4, 6}, 0, 0);
  const ir::Tensor col = iota({3, 1});
  const ir::Tensor shape = int64s({2, 1, 4});
  const ir::Tensor e = run1(op("Expand").build(2), {&col, &shape});
  want.clear();
  for (int64_t i = 0; i < 24; ++i) want.push_back(static_cast<double>((i / 4) % 3));
  expect_close(e, want, {2, 3, 4}, 0, 0);
}

TEST(Pad, ModesMatchNumpy) {
  const ir::Tensor x = iota({2, 3});
  const ir::Tensor pads = int64s({1, 2, 0, 1});  // begin (1, 2), end (0, 1)
  const ir::Tensor value = ir::make_tensor<float>({}, {-1.0f});
  // np.pad(x, ((1, 0), (2, 1)), mode=...)
  expect_close(run1(op("Pad").build(3), {&x, &pads, &value}),
               {-1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 2, -1, -1, -1, 3, 4, 5, -1}, {3, 6}, 0, 0);
  expect_close(run1(op("Pad").s("mode", "edge").build(2), {&x, &pads}),
               {0, 0, 0, 1, 2, 2, 0, 0, 0, 1, 2, 2, 3, 3, 3, 4, 5, 5}, {3, 6}, 0, 0);
  expect_close(run1(op("Pad").s("mode", "reflect").build(2), {&x, &pads}),
               {5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4}, {3, 6}, 0, 0);
  // Opset 18 axes input: pad only axis -1; negative pads crop.
  const ir::Tensor p1 = int64s({-1, 2});
  const ir::Tensor axes = int64s({-1});
  expect_close(run1(op("Pad").build(4), {&x, &p1, nullptr, &axes}, 18),
               {1, 2, 0, 0, 4, 5, 0, 0}, {2, 4}, 0, 0);
  // Opset 2 attribute form.
  expect_close(run1(op("Pad").ints("pads", {0, 1, 0, 0}).f("value", 7.0f).build(1), {&x}, 2),
               {7, 0, 1, 2, 7, 3, 4, 5}, {2, 4}, 0, 0);
}

TEST(Views, ShapeOpsAliasTheirInput) {
  const ir::Tensor x = iota({2, 1, 3});
  const ir::Tensor shape = int64s({0, -1});
  const ir::Tensor r = run1(op("Reshape").build(2), {&x, &shape});
  EXPECT_EQ(r.shape(), (ir::Shape{2, 3}));
  EXPECT_EQ(r.raw(), x.raw());
  EXPECT_FALSE(r.owns_data());
  const ir::Tensor f = run1(op("Flatten").i("axis", -1).build(1), {&x});
  EXPECT_EQ(f.shape(), (ir::Shape{2, 3}));
  EXPECT_EQ(f.raw(), x.raw());
  EXPECT_EQ(run1(op("Squeeze").build(1), {&x}).raw(), x.raw());
  EXPECT_EQ(run1(op("Identity").build(1), {&x}).raw(), x.raw());
  auto d = run_op(op("Dropout").build(1, 2), {&x}, 13);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ((*d)[0].raw(), x.raw());
  EXPECT_EQ((*d)[1].dtype(), ir::DType::kBool);
  EXPECT_TRUE((*d)[1].data<bool>()[5]);
}

TEST(Views, ReshapeZeroAndAllowZero) {
  const ir::Tensor x = iota({0, 4});
  const ir::Tensor spec = int64s({4, 0});
  // allowzero=0: the 0 copies dim 1 (= 4) and 4*4 != 0 elements fails; allowzero=1 keeps the 0.
  EXPECT_FALSE(run_op(op("Reshape").build(2), {&x, &spec}, 14).has_value());
  EXPECT_EQ(run1(op("Reshape").i("allowzero", 1).build(2), {&x, &spec}, 14).shape(),
            (ir::Shape{4, 0}));
}

TEST(Views, SqueezeUnsqueezeAttributeAndInputForms) {
  const ir::Tensor x = iota({3, 1, 2, 1});
  const ir::Tensor axes = int64s({-1});
  EXPECT_EQ(run1(op("Squeeze").build(2), {&x, &axes}, 13).shape(), (ir::Shape{3, 1, 2}));
  EXPECT_EQ(run1(op("Squeeze").ints("axes", {1}).build(1), {&x}, 11).shape(), (ir::Shape{3, 2, 1}));
  EXPECT_FALSE(run_op(op("Squeeze").ints("axes", {0}).build(1), {&x}, 11).has_value());
  const ir::Tensor u = int64s({0, -1});
  EXPECT_EQ(run1(op("Unsqueeze").build(2), {&x, &u}, 13).shape(), (ir::Shape{1, 3, 1, 2, 1, 1}));
  EXPECT_EQ(run1(op("Unsqueeze").ints("axes", {2, 0}).build(1), {&x}, 11).shape(),
            (ir::Shape{1, 3, 1, 1, 2, 1}));
}

}  // namespace
}  // namespace ptq::test
