// Conv and ConvTranspose: fast kernels against the reference on random shapes (fixed seeds),
// the reference against known answers and against itself in lower rank, thread determinism.
#include <algorithm>
#include <random>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

struct ConvCase {
  int64_t n, c, m, g;
  std::vector<int64_t> in, k, s, d, pads;
  std::string auto_pad;
  bool bias;
};

ir::Node conv_node(const ConvCase& cc, const char* op = "Conv") {
  std::vector<ir::Attribute> attrs{attr_int("group", cc.g), attr_ints("strides", cc.s),
                                   attr_ints("dilations", cc.d)};
  if (cc.auto_pad == "NOTSET") {
    attrs.push_back(attr_ints("pads", cc.pads));
  } else {
    attrs.push_back(attr_string("auto_pad", cc.auto_pad));
  }
  return make_node(op, cc.bias ? 3 : 2, 1, attrs);
}

ConvCase random_case(std::mt19937& rng, size_t rank) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  ConvCase cc;
  cc.n = pick(1, 2);
  const int kind = static_cast<int>(pick(0, 3));  // 0 plain, 1 grouped, 2 depthwise, 3 pointwise
  cc.g = kind == 1 ? pick(2, 3) : 1;
  cc.c = cc.g * pick(1, 5);
  cc.m = cc.g * pick(1, 6);
  if (kind == 2) {
    cc.c = cc.g = pick(1, 8);
    cc.m = cc.c * pick(1, 2);
  }
  const char* pads[] = {"NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  cc.auto_pad = pads[pick(0, 4)];
  for (size_t i = 0; i < rank; ++i) {
    cc.k.push_back(kind == 3 ? 1 : pick(1, 5));
    cc.s.push_back(kind == 3 ? 1 : pick(1, 3));
    cc.d.push_back(kind == 3 ? 1 : pick(1, 2));
    cc.in.push_back(pick(1, 14) + (cc.k.back() - 1) * cc.d.back());
  }
  for (size_t i = 0; i < 2 * rank; ++i) cc.pads.push_back(kind == 3 ? 0 : pick(0, 2));
  if (kind == 3) cc.auto_pad = "NOTSET";
  cc.bias = pick(0, 1) == 1;
  return cc;
}

struct ConvInputs {
  ir::Tensor x, w, b;
  std::vector<const ir::Tensor*> ptrs() const {
    std::vector<const ir::Tensor*> p{&x, &w};
    if (!b.empty()) p.push_back(&b);
    return p;
  }
};

ConvInputs conv_inputs(std::mt19937& rng, const ConvCase& cc) {
  ConvInputs in;
  ir::Shape xs{cc.n, cc.c}, ws{cc.m, cc.c / cc.g};
  xs.insert(xs.end(), cc.in.begin(), cc.in.end());
  ws.insert(ws.end(), cc.k.begin(), cc.k.end());
  in.x = random_tensor(rng, xs);
  in.w = random_tensor(rng, ws);
  if (cc.bias) in.b = random_tensor(rng, {cc.m});
  return in;
}

TEST(Conv, FastMatchesReferenceOnRandomShapes) {
  std::mt19937 rng(1234);
  int checked = 0;
  for (int i = 0; i < 160; ++i) {
    const ConvCase cc = random_case(rng, i % 4 == 0 ? 1 : 2);
    const ConvInputs in = conv_inputs(rng, cc);
    const ir::Node node = conv_node(cc);
    auto ref = run_kernel(node, 13, in.ptrs(), true);
    auto fast = run_kernel(node, 13, in.ptrs(), false, 2);
    ASSERT_EQ(ref.size(), 1u);
    ASSERT_EQ(fast.size(), 1u);
    EXPECT_LE(rel_l2(fast[0], ref[0]), 1e-5)
        << "case " << i << " x " << ir::shape_str(in.x.shape()) << " w "
        << ir::shape_str(in.w.shape()) << " g " << cc.g << " " << cc.auto_pad;
    ++checked;
  }
  EXPECT_EQ(checked, 160);
}

// The float64 reference against a float32 reference run: same loops, different precision.
TEST(Conv, Float64MatchesFloat32) {
  std::mt19937 rng(7);
  const ConvCase cc{2, 4, 6, 2, {7, 9}, {3, 2}, {2, 1}, {1, 2}, {1, 0, 2, 1}, "NOTSET", true};
  const ConvInputs in = conv_inputs(rng, cc);
  const ir::Tensor xd = to_double(in.x), wd = to_double(in.w), bd = to_double(in.b);
  auto f = run_kernel(conv_node(cc), 13, in.ptrs(), false);
  auto d = run_kernel(conv_node(cc), 13, {&xd, &wd, &bd}, false);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].dtype(), ir::DType::kFloat64);
  EXPECT_LE(rel_l2(f[0], d[0]), 1e-6);
}

// ONNX's Conv examples (test_basic_conv_with_padding; strides with asymmetric padding on a
// 5x5 input, worked by hand).
TEST(Conv, KnownAnswer) {
  ir::Tensor x(ir::DType::kFloat32, {1, 1, 5, 5});
  for (int i = 0; i < 25; ++i) x.data<float>()[i] = static_cast<float>(i);
  ir::Tensor w(ir::DType::kFloat32, {1, 1, 3, 3});
  for (float& v : w.span<float>()) v = 1.0f;
  for (bool reference : {true, false}) {
    auto padded = run_kernel(make_node("Conv", 2, 1, {attr_ints("pads", {1, 1, 1, 1})}), 11,
                             {&x, &w}, reference);
    const float want_padded[25] = {12, 21, 27, 33, 24,  33, 54, 63, 72, 51,  63, 99, 108,
                                   117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84};
    ASSERT_EQ(padded[0].shape(), (ir::Shape{1, 1, 5, 5}));
    for (int i = 0; i < 25; ++i) EXPECT_EQ(padded[0].data<float>()[i], want_padded[i]) << i;
    auto strided = run_kernel(
        make_node("Conv", 2, 1, {attr_ints("pads", {1, 0, 1, 0}), attr_ints("strides", {2, 2})}),
        11, {&x, &w}, reference);
    const float want_strided[6] = {21, 33, 99, 117, 111, 123};
    ASSERT_EQ(strided[0].shape(), (ir::Shape{1, 1, 3, 2}));
    for (int i = 0; i < 6; ++i) EXPECT_EQ(strided[0].data<float>()[i], want_strided[i]) << i;
  }
}

// A 3-D conv whose kernel has depth 1 is a 2-D conv on every depth slice.
TEST(Conv, ThreeDimensionalAgreesWithSlicedTwoDimensional) {
  std::mt19937 rng(99);
  const int64_t D = 3, H = 6, W = 7;
  ir::Tensor x3 = random_tensor(rng, {1, 2, D, H, W});
  ir::Tensor w3 = random_tensor(rng, {4, 2, 1, 3, 3});
  ir::Tensor b = random_tensor(rng, {4});
  auto y3 = run_kernel(make_node("Conv", 3, 1, {attr_ints("pads", {0, 1, 0, 0, 1, 2}),
                                                attr_ints("strides", {1, 2, 1})}),
                       13, {&x3, &w3, &b}, false);
  ASSERT_EQ(y3[0].shape(), (ir::Shape{1, 4, 3, 3, 7}));
  ir::Tensor w2 = w3.reshaped({4, 2, 3, 3});
  for (int64_t d = 0; d < D; ++d) {
    ir::Tensor x2(ir::DType::kFloat32, {1, 2, H, W});
    for (int64_t c = 0; c < 2; ++c) {
      std::memcpy(x2.data<float>() + c * H * W, x3.data<float>() + (c * D + d) * H * W,
                  sizeof(float) * H * W);
    }
    auto y2 = run_kernel(make_node("Conv", 3, 1, {attr_ints("pads", {1, 0, 1, 2}),
                                                  attr_ints("strides", {2, 1})}),
                         13, {&x2, &w2, &b}, false);
    ASSERT_EQ(y2[0].shape(), (ir::Shape{1, 4, 3, 7}));
    for (int64_t m = 0; m < 4; ++m) {
      for (int64_t i = 0; i < 21; ++i) {
        EXPECT_NEAR(y3[0].data<float>()[(m * D + d) * 21 + i], y2[0].data<float>()[m * 21 + i],
                    1e-5);
      }
    }
  }
}

TEST(Conv, BitIdenticalForAnyThreadCount) {
  std::mt19937 rng(5);
  const std::vector<ConvCase> cases{
      {2, 16, 32, 1, {30, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, "NOTSET", true},   // im2col
      {1, 64, 96, 1, {20, 20}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, "NOTSET", true},   // 1x1
      // 1x1 over 32 channels at 28x28: 4 column tiles on 1 thread, 13 on 2 or 3
      {1, 32, 192, 1, {28, 28}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, "NOTSET", true},
      {1, 32, 32, 32, {28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, "NOTSET", true},  // depthwise
      {1, 512, 512, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, "NOTSET", false}, // row tiles
      // shifted, 9 images: each thread pads its own (1 thread), 8 so and the last in a round
      // (2 threads), all in rounds (3 threads)
      {9, 12, 20, 1, {13, 11}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, "NOTSET", true},
  };
  for (const ConvCase& cc : cases) {
    const ConvInputs in = conv_inputs(rng, cc);
    auto one = run_kernel(conv_node(cc), 13, in.ptrs(), false, 1);
    for (int t : {2, 3}) {
      auto many = run_kernel(conv_node(cc), 13, in.ptrs(), false, t);
      EXPECT_TRUE(bit_identical(one[0], many[0]))
          << ir::shape_str(in.w.shape()) << " threads " << t;
    }
  }
}

// A 1x1 conv of up to 256 input channels reads its input rows in place, except a tile whose
// whole panels would read past the input's end (the last image's last tile), which is packed
// first: an image's outputs are the same bits in a batch (in place) and alone (packed), on any
// thread count, and match the reference. 300 channels take the packed path throughout.
TEST(Conv, PointwiseInPlaceEqualsPacked) {
  std::mt19937 rng(17);
  for (int64_t c : {5, 96, 256, 300}) {
    const ConvCase cc{3, c, 40, 1, {23, 29}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, "NOTSET", true};
    const ConvInputs in = conv_inputs(rng, cc);
    const auto batch = run_kernel(conv_node(cc), 13, in.ptrs(), false, 2);
    const auto ref = run_kernel(conv_node(cc), 13, in.ptrs(), true);
    EXPECT_LE(rel_l2(batch[0], ref[0]), 1e-5) << "channels " << c;
    const int64_t x_image = c * 23 * 29, y_image = 40 * 23 * 29;
    for (int64_t n = 0; n < cc.n; ++n) {
      ir::Tensor x(ir::DType::kFloat32, {1, c, 23, 29});
      std::copy_n(in.x.data<float>() + n * x_image, x_image, x.data<float>());
      for (int t : {1, 3}) {
        const auto alone = run_kernel(conv_node(cc), 13, {&x, &in.w, &in.b}, false, t);
        const float* y = batch[0].data<float>() + n * y_image;
        EXPECT_TRUE(std::equal(y, y + y_image, alone[0].data<float>()))
            << "channels " << c << " image " << n << " threads " << t;
      }
    }
  }
}

// Column stride 2 builds its im2col columns from pairs of row loads: an RGB stem (7x7/2, pad 3)
// and shapes whose 16-column halves span one, two or three output rows, or clip at the edges.
TEST(Conv, StrideTwoColumnsMatchTheReference) {
  std::mt19937 rng(11);
  const std::vector<ConvCase> cases{
      {2, 3, 16, 1, {37, 45}, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3}, "NOTSET", true},
      {1, 3, 8, 1, {16, 13}, {7, 7}, {2, 2}, {1, 1}, {3, 2, 1, 3}, "NOTSET", false},
      {1, 5, 7, 1, {11, 9}, {3, 3}, {1, 2}, {1, 1}, {0, 1, 2, 0}, "NOTSET", true},
      {1, 2, 4, 1, {9, 70}, {3, 5}, {2, 2}, {2, 1}, {1, 0, 1, 4}, "NOTSET", true},
  };
  for (const ConvCase& cc : cases) {
    const ConvInputs in = conv_inputs(rng, cc);
    auto ref = run_kernel(conv_node(cc), 13, in.ptrs(), true);
    auto one = run_kernel(conv_node(cc), 13, in.ptrs(), false, 1);
    EXPECT_LE(rel_l2(one[0], ref[0]), 1e-5) << ir::shape_str(in.x.shape());
    auto three = run_kernel(conv_node(cc), 13, in.ptrs(), false, 3);
    EXPECT_TRUE(bit_identical(one[0], three[0])) << ir::shape_str(in.x.shape());
  }
}

TEST(Conv, ErrorsNameTheNodeAndShapes) {
  ir::Tensor x(ir::DType::kFloat32, {1, 3, 8, 8}), w(ir::DType::kFloat32, {4, 2, 3, 3});
  const std::string e = kernel_error(make_node("Conv", 2, 1), 13, {&x, &w});
  EXPECT_NE(e.find("Conv node 'n'"), std::string::npos) << e;
  EXPECT_NE(e.find("[1, 3, 8, 8]"), std::string::npos) << e;
  EXPECT_NE(e.find("[4, 2, 3, 3]"), std::string::npos) << e;
}

// ---- ConvTranspose ---------------------------------------------------------------------------

TEST(ConvTranspose, FastMatchesReferenceOnRandomShapes) {
  std::mt19937 rng(4321);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < 60; ++i) {
    const size_t rank = i % 3 == 0 ? 1 : 2;
    const int64_t g = pick(1, 2), c = g * pick(1, 3), mg = pick(1, 3), n = pick(1, 2);
    ir::Shape xs{n, c}, ws{c, mg};
    std::vector<int64_t> s, d, pads(2 * rank), op;
    for (size_t r = 0; r < rank; ++r) {
      xs.push_back(pick(1, 7));
      ws.push_back(pick(1, 4));
      s.push_back(pick(1, 3));
      d.push_back(pick(1, 2));
      op.push_back(pick(0, s.back() - 1));
    }
    for (size_t r = 0; r < rank; ++r) {
      // Pad only where the full output is long enough to stay non-empty.
      const int64_t full = s[r] * (xs[2 + r] - 1) + op[r] + (ws[2 + r] - 1) * d[r] + 1;
      pads[r] = full > 2 ? pick(0, 1) : 0;
      pads[r + rank] = full > 2 ? pick(0, 1) : 0;
    }
    std::vector<ir::Attribute> attrs{attr_int("group", g), attr_ints("strides", s),
                                     attr_ints("dilations", d), attr_ints("output_padding", op)};
    if (i % 5 == 1) {
      attrs.push_back(attr_string("auto_pad", i % 2 ? "SAME_UPPER" : "SAME_LOWER"));
    } else {
      attrs.push_back(attr_ints("pads", pads));
    }
    const ir::Tensor x = random_tensor(rng, xs), w = random_tensor(rng, ws),
                     b = random_tensor(rng, {g * mg});
    const ir::Node node = make_node("ConvTranspose", 3, 1, attrs);
    auto ref = run_kernel(node, 13, {&x, &w, &b}, true);
    auto fast = run_kernel(node, 13, {&x, &w, &b}, false, 2);
    ASSERT_EQ(fast.size(), 1u);
    EXPECT_LE(rel_l2(fast[0], ref[0]), 1e-5) << "case " << i;
    auto three = run_kernel(node, 13, {&x, &w, &b}, false, 3);
    auto one = run_kernel(node, 13, {&x, &w, &b}, false, 1);
    EXPECT_TRUE(bit_identical(one[0], three[0])) << "case " << i;
  }
}

// ONNX's ConvTranspose example: 3x3 input of 0..8, two 3x3 all-ones kernels.
TEST(ConvTranspose, KnownAnswerAndOutputGeometry) {
  ir::Tensor x(ir::DType::kFloat32, {1, 1, 3, 3});
  for (int i = 0; i < 9; ++i) x.data<float>()[i] = static_cast<float>(i);
  ir::Tensor w(ir::DType::kFloat32, {1, 2, 3, 3});
  for (float& v : w.span<float>()) v = 1.0f;
  const float want[25] = {0, 1, 3,  3,  2,  3,  8,  15, 12, 7,  9, 21, 36,
                          27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8};
  for (bool reference : {true, false}) {
    auto y = run_kernel(make_node("ConvTranspose", 2, 1), 11, {&x, &w}, reference);
    ASSERT_EQ(y[0].shape(), (ir::Shape{1, 2, 5, 5}));
    for (int c = 0; c < 2; ++c) {
      for (int i = 0; i < 25; ++i) EXPECT_EQ(y[0].data<float>()[c * 25 + i], want[i]);
    }
  }
  // strides 3x2, output_shape 10x8 (ONNX test_convtranspose_output_shape) and the equivalent
  // output_padding 1x1 (test_convtranspose_pad) give [1, 2, 10, 8].
  for (auto attrs : std::vector<std::vector<ir::Attribute>>{
           {attr_ints("strides", {3, 2}), attr_ints("output_shape", {10, 8})},
           {attr_ints("strides", {3, 2}), attr_ints("output_padding", {1, 1})}}) {
    for (bool reference : {true, false}) {
      auto y = run_kernel(make_node("ConvTranspose", 2, 1, attrs), 11, {&x, &w}, reference);
      ASSERT_EQ(y[0].shape(), (ir::Shape{1, 2, 10, 8}));
      // The extra row and column are at the end (ONNX's expected output).
      const float row0[8] = {0, 0, 1, 1, 3, 2, 2, 0};
      for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(y[0].data<float>()[i], row0[i]) << i;
        EXPECT_EQ(y[0].data<float>()[9 * 8 + i], 0.0f) << i;
      }
    }
  }
}

}  // namespace
}  // namespace ptq::runtime::testing
