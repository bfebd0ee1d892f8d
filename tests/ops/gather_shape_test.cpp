// Gather family and int64 shape arithmetic: Gather with negative indices on every axis,
// GatherElements, and the Shape → Gather → Unsqueeze → Concat → Reshape chain that exported
// models use to build shapes at run time.
#include "op_test_util.h"

namespace ptq::test {
namespace {

TEST(Gather, NegativeIndicesOnEveryAxisMatchNaive) {
  std::mt19937 rng(21);
  const ir::Shape shape = {3, 4, 5};
  const ir::Tensor x = random_tensor(rng, shape, -2.0f, 2.0f);
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const int64_t dim = shape[static_cast<size_t>(a)];
    const ir::Tensor idx = random_int64(rng, {2, 3}, -dim, dim - 1);
    const ir::Tensor y = run1(op("Gather").i("axis", axis).build(2), {&x, &idx});
    ir::Shape out(shape.begin(), shape.begin() + a);
    out.push_back(2);
    out.push_back(3);
    out.insert(out.end(), shape.begin() + a + 1, shape.end());
    std::vector<double> want(static_cast<size_t>(ir::num_elements(out)));
    for (size_t o = 0; o < want.size(); ++o) {
      const auto oi = unravel(static_cast<int64_t>(o), out);
      std::vector<int64_t> ii(oi.begin(), oi.begin() + a);
      int64_t k =
          idx.data<int64_t>()[oi[static_cast<size_t>(a)] * 3 + oi[static_cast<size_t>(a) + 1]];
      ii.push_back(k < 0 ? k + dim : k);
      ii.insert(ii.end(), oi.begin() + a + 2, oi.end());
      want[o] = x.as_double(ravel(ii, shape));
    }
    SCOPED_TRACE(axis);
    expect_close(y, want, out, 0, 0);
  }
  const ir::Tensor bad = int64s({4});
  EXPECT_FALSE(run_op(op("Gather").build(2), {&x, &bad}).has_value());
  // A scalar index drops the axis.
  const ir::Tensor scalar = ir::make_tensor<int64_t>({}, {-1});
  EXPECT_EQ(run1(op("Gather").i("axis", 1).build(2), {&x, &scalar}).shape(), (ir::Shape{3, 5}));
}

TEST(Gather, ElementsAlongAxisWithNegativeIndices) {
  const ir::Tensor x = ir::make_tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const ir::Tensor idx = ir::make_tensor<int32_t>({2, 2}, {-1, 0, 1, -3});
  expect_close(run1(op("GatherElements").i("axis", 1).build(2), {&x, &idx}), {3, 1, 5, 4}, {2, 2},
               0, 0);
  const ir::Tensor idx0 = ir::make_tensor<int64_t>({1, 3}, {1, 0, -1});
  expect_close(run1(op("GatherElements").i("axis", 0).build(2), {&x, &idx0}), {4, 2, 6}, {1, 3}, 0,
               0);
}

// x [N, C, H, W] → reshape to [N, C * H * W] with the shape computed by int64 ops.
TEST(ShapeChain, ShapeGatherConcatReshape) {
  std::mt19937 rng(22);
  const ir::Tensor x = random_tensor(rng, {2, 3, 4, 5}, -2.0f, 2.0f);
  const ir::Tensor shape = run1(op("Shape").build(1), {&x});
  ASSERT_EQ(shape.dtype(), ir::DType::kInt64);
  const ir::Tensor zero = ir::make_tensor<int64_t>({}, {0});
  const ir::Tensor n = run1(op("Gather").i("axis", 0).build(2), {&shape, &zero});
  const ir::Tensor axes0 = int64s({0});
  const ir::Tensor n1 = run1(op("Unsqueeze").build(2), {&n, &axes0}, 13);
  // C * H * W via Slice + ReduceProd-free arithmetic: Mul of gathered dims.
  const ir::Tensor one = int64s({1}), end = int64s({INT64_MAX});
  const ir::Tensor tail = run1(op("Slice").build(3), {&shape, &one, &end}, 13);
  EXPECT_EQ(std::vector<int64_t>(tail.span<int64_t>().begin(), tail.span<int64_t>().end()),
            (std::vector<int64_t>{3, 4, 5}));
  const ir::Tensor i1 = ir::make_tensor<int64_t>({}, {1}), i2 = ir::make_tensor<int64_t>({}, {2});
  const ir::Tensor c = run1(op("Gather").build(2), {&tail, &zero});
  const ir::Tensor h = run1(op("Gather").build(2), {&tail, &i1});
  const ir::Tensor w = run1(op("Gather").build(2), {&tail, &i2});
  const ir::Tensor ch = run1(op("Mul").build(2), {&c, &h});
  const ir::Tensor chw = run1(op("Mul").build(2), {&ch, &w});
  const ir::Tensor chw1 = run1(op("Unsqueeze").build(2), {&chw, &axes0}, 13);
  const ir::Tensor target = run1(op("Concat").i("axis", 0).build(2), {&n1, &chw1});
  EXPECT_EQ(std::vector<int64_t>(target.span<int64_t>().begin(), target.span<int64_t>().end()),
            (std::vector<int64_t>{2, 60}));
  const ir::Tensor y = run1(op("Reshape").build(2), {&x, &target});
  EXPECT_EQ(y.shape(), (ir::Shape{2, 60}));
  EXPECT_EQ(y.raw(), x.raw());
  // Integer Div/Add/Equal and ConstantOfShape / Range on the same int64 values.
  const ir::Tensor divisor = int64s({2, 7}), minus2 = ir::make_tensor<int64_t>({}, {-2});
  const ir::Tensor half = run1(op("Div").build(2), {&target, &divisor});
  EXPECT_EQ(half.span<int64_t>()[1], 8);
  const ir::Tensor sum = run1(op("Add").build(2), {&target, &minus2});
  EXPECT_EQ(sum.span<int64_t>()[0], 0);
  const ir::Tensor eq = run1(op("Equal").build(2), {&sum, &zero});
  EXPECT_TRUE(eq.data<bool>()[0]);
  EXPECT_FALSE(eq.data<bool>()[1]);
  const ir::Tensor filled = run1(
      op("ConstantOfShape").t("value", ir::make_tensor<int64_t>({1}, {9})).build(1), {&target});
  EXPECT_EQ(filled.shape(), (ir::Shape{2, 60}));
  EXPECT_EQ(filled.data<int64_t>()[119], 9);
  const ir::Tensor ten = ir::make_tensor<int64_t>({}, {10}),
                   minus3 = ir::make_tensor<int64_t>({}, {-3});
  const ir::Tensor r = run1(op("Range").build(3), {&ten, &zero, &minus3});
  EXPECT_EQ(std::vector<int64_t>(r.span<int64_t>().begin(), r.span<int64_t>().end()),
            (std::vector<int64_t>{10, 7, 4, 1}));
}

TEST(ShapeChain, ShapeStartEnd) {
  const ir::Tensor x(ir::DType::kFloat32, {2, 3, 4, 5});
  const ir::Tensor s = run1(op("Shape").i("start", -3).i("end", -1).build(1), {&x}, 15);
  EXPECT_EQ(std::vector<int64_t>(s.span<int64_t>().begin(), s.span<int64_t>().end()),
            (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(run1(op("Shape").i("start", 10).build(1), {&x}, 15).shape(), (ir::Shape{0}));
  EXPECT_EQ(run1(op("Size").build(1), {&x}).data<int64_t>()[0], 120);
}

TEST(Constant, EveryValueAttribute) {
  ir::Node ints = op("Constant").ints("value_ints", {3, -1}).build(0);
  const ir::Tensor a = run1(ints, {});
  EXPECT_EQ(a.dtype(), ir::DType::kInt64);
  expect_close(a, {3, -1}, {2}, 0, 0);
  const ir::Tensor b = run1(op("Constant").i("value_int", 7).build(0), {});
  EXPECT_EQ(b.shape(), ir::Shape{});
  EXPECT_EQ(b.data<int64_t>()[0], 7);
  const ir::Tensor c = run1(op("Constant").f("value_float", 0.25f).build(0), {});
  EXPECT_EQ(c.dtype(), ir::DType::kFloat32);
  EXPECT_EQ(c.data<float>()[0], 0.25f);
  ir::Attribute floats;
  floats.name = "value_floats";
  floats.type = ir::AttrType::kFloats;
  floats.floats = {1.5f, 2.5f};
  ir::Node fn = op("Constant").build(0);
  fn.set_attr(floats);
  expect_close(run1(fn, {}), {1.5, 2.5}, {2}, 0, 0);
  const ir::Tensor t = ir::make_tensor<int32_t>({2, 1}, {4, 5});
  const ir::Tensor d = run1(op("Constant").t("value", t).build(0), {});
  EXPECT_TRUE(same_bytes(d, t));
  const ir::Tensor s = run1(op("Constant").s("value_string", "hi").build(0), {});
  ASSERT_EQ(s.dtype(), ir::DType::kString);
  EXPECT_EQ(s.strings().at(0), "hi");
  EXPECT_FALSE(run_op(op("Constant").build(0), {}).has_value());
}

}  // namespace
}  // namespace ptq::test
