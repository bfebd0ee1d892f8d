// The detection and sampling kernels (NonMaxSuppression, RoiAlign, GridSample) against answers
// computed independently in the test: a float64 greedy NMS, linear images (which bilinear
// sampling reproduces exactly), hand-computed corner cases; the fast GridSample against the
// reference; every kernel bit-identical on 1, 2 and 3 threads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

ir::Tensor floats(ir::Shape shape, std::vector<float> v) {
  return ir::make_tensor<float>(std::move(shape), std::span<const float>(v));
}
ir::Tensor int64s(ir::Shape shape, std::vector<int64_t> v) {
  return ir::make_tensor<int64_t>(std::move(shape), std::span<const int64_t>(v));
}

std::vector<int64_t> values(const ir::Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) v[static_cast<size_t>(i)] = t.as_int64(i);
  return v;
}

void expect_same_on_threads(const ir::Node& node, int64_t opset,
                            const std::vector<const ir::Tensor*>& in, bool reference) {
  const auto one = run_kernel(node, opset, in, reference, 1);
  ASSERT_EQ(one.size(), 1u);
  for (int threads : {2, 3}) {
    const auto more = run_kernel(node, opset, in, reference, threads);
    ASSERT_EQ(more.size(), 1u);
    EXPECT_TRUE(bit_identical(one[0], more[0])) << node.op_type << " on " << threads;
  }
}

// ---- NonMaxSuppression ----------------------------------------------------------------------

// Greedy NMS in float64 over corner boxes [y1, x1, y2, x2], written from the operator's text.
std::vector<int64_t> nms_f64(const std::vector<std::array<double, 4>>& b,
                             const std::vector<double>& s, int64_t max_out, double iou_max,
                             double score_min) {
  auto area = [](const std::array<double, 4>& r) {
    return std::max(0.0, std::abs(r[2] - r[0]) * std::abs(r[3] - r[1]));
  };
  auto iou = [&](const std::array<double, 4>& p, const std::array<double, 4>& q) {
    const double h = std::min(std::max(p[0], p[2]), std::max(q[0], q[2])) -
                     std::max(std::min(p[0], p[2]), std::min(q[0], q[2]));
    const double w = std::min(std::max(p[1], p[3]), std::max(q[1], q[3])) -
                     std::max(std::min(p[1], p[3]), std::min(q[1], q[3]));
    if (h <= 0 || w <= 0) return 0.0;
    return h * w / (area(p) + area(q) - h * w);
  };
  std::vector<int64_t> order(b.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
  std::vector<int64_t> kept;
  for (int64_t i : order) {
    if (static_cast<int64_t>(kept.size()) == max_out || s[i] <= score_min) continue;
    bool ok = true;
    for (int64_t k : kept) ok = ok && iou(b[i], b[k]) <= iou_max;
    if (ok) kept.push_back(i);
  }
  return kept;
}

struct NmsCase {
  ir::Tensor boxes, scores, max_out, iou, score;
};

// Random boxes on a small field so that many overlap; scores on a coarse grid so some tie.
NmsCase random_nms(std::mt19937& rng, int64_t batch, int64_t classes, int64_t n) {
  NmsCase c{ir::Tensor(ir::DType::kFloat32, {batch, n, 4}),
            ir::Tensor(ir::DType::kFloat32, {batch, classes, n}), int64s({1}, {4}),
            floats({1}, {0.4f}), floats({1}, {0.2f})};
  std::uniform_real_distribution<float> pos(0.0f, 8.0f), size(1.0f, 4.0f);
  std::uniform_int_distribution<int> score(0, 20);
  float* b = c.boxes.data<float>();
  for (int64_t i = 0; i < batch * n; ++i) {
    const float y = pos(rng), x = pos(rng), h = size(rng), w = size(rng);
    const bool flip = i % 3 == 0;  // either diagonal is a valid box
    b[4 * i + 0] = flip ? y + h : y;
    b[4 * i + 1] = flip ? x + w : x;
    b[4 * i + 2] = flip ? y : y + h;
    b[4 * i + 3] = flip ? x : x + w;
  }
  for (float& v : c.scores.span<float>()) v = static_cast<float>(score(rng)) / 20.0f;
  return c;
}

TEST(NonMaxSuppression, MatchesFloat64GreedySelection) {
  std::mt19937 rng(30);
  const int64_t batch = 2, classes = 3, n = 40;
  NmsCase c = random_nms(rng, batch, classes, n);
  const auto node = make_node("NonMaxSuppression", 5, 1);
  const auto out = run_kernel(node, 11, {&c.boxes, &c.scores, &c.max_out, &c.iou, &c.score},
                              true);
  ASSERT_EQ(out.size(), 1u);
  std::vector<int64_t> want;
  for (int64_t bi = 0; bi < batch; ++bi) {
    std::vector<std::array<double, 4>> boxes(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      for (int k = 0; k < 4; ++k) boxes[i][k] = c.boxes.data<float>()[(bi * n + i) * 4 + k];
    }
    for (int64_t ci = 0; ci < classes; ++ci) {
      const float* s = c.scores.data<float>() + (bi * classes + ci) * n;
      for (int64_t i : nms_f64(boxes, std::vector<double>(s, s + n), 4, 0.4, 0.2)) {
        want.insert(want.end(), {bi, ci, i});
      }
    }
  }
  EXPECT_EQ(out[0].shape(), (ir::Shape{static_cast<int64_t>(want.size()) / 3, 3}));
  EXPECT_EQ(values(out[0]), want);
  expect_same_on_threads(node, 11, {&c.boxes, &c.scores, &c.max_out, &c.iou, &c.score}, true);
}

TEST(NonMaxSuppression, CenterPointBoxesEqualTheirCorners) {
  std::mt19937 rng(31);
  NmsCase c = random_nms(rng, 1, 2, 30);
  ir::Tensor centers(ir::DType::kFloat32, c.boxes.shape());
  const float* b = c.boxes.data<float>();
  for (int64_t i = 0; i < 30; ++i) {  // [y1, x1, y2, x2] -> [xc, yc, w, h]
    const float* r = b + 4 * i;
    float* o = centers.data<float>() + 4 * i;
    o[0] = (r[1] + r[3]) / 2;
    o[1] = (r[0] + r[2]) / 2;
    o[2] = std::abs(r[3] - r[1]);
    o[3] = std::abs(r[2] - r[0]);
  }
  const auto corner = run_kernel(make_node("NonMaxSuppression", 5, 1), 11,
                                 {&c.boxes, &c.scores, &c.max_out, &c.iou, &c.score}, true);
  const auto center =
      run_kernel(make_node("NonMaxSuppression", 5, 1, {attr_int("center_point_box", 1)}), 11,
                 {&centers, &c.scores, &c.max_out, &c.iou, &c.score}, true);
  ASSERT_EQ(corner.size(), 1u);
  ASSERT_EQ(center.size(), 1u);
  EXPECT_GT(corner[0].dim(0), 2);
  EXPECT_EQ(values(center[0]), values(corner[0]));
}

TEST(NonMaxSuppression, OmittedLimitsSelectNothingAndIdenticalBoxesKeepTheFirst) {
  const ir::Tensor boxes = floats({1, 3, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1});
  const ir::Tensor scores = floats({1, 1, 3}, {0.5f, 0.5f, 0.5f});
  const ir::Tensor max_out = int64s({1}, {3});
  const auto node = make_node("NonMaxSuppression", 3, 1);
  const auto none = run_kernel(make_node("NonMaxSuppression", 2, 1), 11, {&boxes, &scores}, true);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].shape(), (ir::Shape{0, 3}));
  const auto one = run_kernel(node, 11, {&boxes, &scores, &max_out}, true);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(values(one[0]), (std::vector<int64_t>{0, 0, 0}));
}

TEST(NonMaxSuppression, MismatchedShapesAreNamed) {
  const ir::Tensor boxes(ir::DType::kFloat32, {1, 5, 4});
  const ir::Tensor scores(ir::DType::kFloat32, {1, 2, 6});
  const std::string err = kernel_error(make_node("NonMaxSuppression", 2, 1), 11,
                                       {&boxes, &scores});
  EXPECT_NE(err.find("'n'"), std::string::npos) << err;
  EXPECT_NE(err.find("[1, 5, 4]"), std::string::npos) << err;
  EXPECT_NE(err.find("[1, 2, 6]"), std::string::npos) << err;
  const ir::Tensor ok_scores(ir::DType::kFloat32, {1, 2, 5});
  const ir::Tensor max_out = int64s({1}, {1});
  const ir::Tensor iou = floats({1}, {1.5f});
  EXPECT_NE(kernel_error(make_node("NonMaxSuppression", 4, 1), 11,
                         {&boxes, &ok_scores, &max_out, &iou})
                .find("iou_threshold 1.5 is outside [0, 1]"),
            std::string::npos);
}

// ---- RoiAlign -------------------------------------------------------------------------------

// X[n, c, y, x] = a x + b y + k(n, c): bilinear samples reproduce it exactly, so a bin's mean
// is its value at the bin's centre while every sample lies inside the plane.
ir::Tensor linear_image(int64_t batch, int64_t channels, int64_t h, int64_t w, double a,
                        double b) {
  ir::Tensor x(ir::DType::kFloat32, {batch, channels, h, w});
  float* p = x.data<float>();
  for (int64_t nc = 0; nc < batch * channels; ++nc) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t i = 0; i < w; ++i) {
        p[(nc * h + y) * w + i] = static_cast<float>(a * i + b * y + 3.0 * nc);
      }
    }
  }
  return x;
}

TEST(RoiAlign, AverageOfALinearImageIsItsValueAtEachBinCentre) {
  const ir::Tensor x = linear_image(2, 3, 12, 14, 0.5, -0.25);
  const ir::Tensor rois = floats({3, 4}, {2, 3, 16, 14, 4.5f, 2.5f, 9, 11, 1, 1, 3, 14});
  const ir::Tensor batch = int64s({3}, {1, 0, 1});
  const double scale = 0.75;
  for (const std::string mode : {"half_pixel", "output_half_pixel"}) {
    for (int64_t ratio : {0, 2}) {
      const auto node = make_node("RoiAlign", 3, 1,
                                  {attr_int("output_height", 3), attr_int("output_width", 2),
                                   attr_int("sampling_ratio", ratio),
                                   attr_float("spatial_scale", static_cast<float>(scale)),
                                   attr_string("coordinate_transformation_mode", mode)});
      const auto out = run_kernel(node, 16, {&x, &rois, &batch}, true);
      ASSERT_EQ(out.size(), 1u);
      ASSERT_EQ(out[0].shape(), (ir::Shape{3, 3, 3, 2}));
      const double shift = mode == "half_pixel" ? 0.5 : 0.0;
      for (int64_t r = 0; r < 3; ++r) {
        const float* roi = rois.data<float>() + 4 * r;
        const double x0 = roi[0] * scale - shift, y0 = roi[1] * scale - shift;
        const double bw = std::max(roi[2] * scale - shift - x0, shift > 0 ? 0.0 : 1.0) / 2;
        const double bh = std::max(roi[3] * scale - shift - y0, shift > 0 ? 0.0 : 1.0) / 3;
        for (int64_t c = 0; c < 3; ++c) {
          for (int64_t i = 0; i < 6; ++i) {
            const double yc = y0 + (static_cast<double>(i / 2) + 0.5) * bh;
            const double xc = x0 + (static_cast<double>(i % 2) + 0.5) * bw;
            const double want = 0.5 * xc - 0.25 * yc + 3.0 * (batch.as_int64(r) * 3 + c);
            EXPECT_NEAR(out[0].as_double((r * 3 + c) * 6 + i), want, 1e-4)
                << mode << " ratio " << ratio << " roi " << r;
          }
        }
      }
      expect_same_on_threads(node, 16, {&x, &rois, &batch}, true);
    }
  }
}

TEST(RoiAlign, MaxTakesTheLargestWeightedCorner) {
  // One sample at (0.5, 0.5): corners 1, 2, 3, 4 each weigh 1/4.
  const ir::Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  const ir::Tensor rois = floats({1, 4}, {0, 0, 1, 1});
  const ir::Tensor batch = int64s({1}, {0});
  for (const std::string mode : {"avg", "max"}) {
    const auto out = run_kernel(make_node("RoiAlign", 3, 1,
                                          {attr_string("mode", mode),
                                           attr_int("sampling_ratio", 1)}),
                                10, {&x, &rois, &batch}, true);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_FLOAT_EQ(out[0].data<float>()[0], mode == "max" ? 1.0f : 2.5f);
  }
}

TEST(RoiAlign, BatchIndexOutsideTheBatchIsNamed) {
  const ir::Tensor x(ir::DType::kFloat32, {2, 1, 4, 4});
  const ir::Tensor rois = floats({1, 4}, {0, 0, 1, 1});
  const ir::Tensor batch = int64s({1}, {2});
  EXPECT_NE(kernel_error(make_node("RoiAlign", 3, 1), 16, {&x, &rois, &batch})
                .find("batch index 2 of roi 0 is outside [0, 2)"),
            std::string::npos);
}

// ---- GridSample -----------------------------------------------------------------------------

ir::Node grid_node(const std::string& mode, const std::string& padding, int64_t align) {
  return make_node("GridSample", 2, 1,
                   {attr_string("mode", mode), attr_string("padding_mode", padding),
                    attr_int("align_corners", align)});
}

// The normalised coordinate of pixel position p on an axis of `len` pixels.
float normalised(double p, int64_t len, bool align) {
  return static_cast<float>(align ? 2 * p / static_cast<double>(len - 1) - 1
                                  : (2 * p + 1) / static_cast<double>(len) - 1);
}

TEST(GridSample, PixelCentresReturnThePixelsInEveryMode) {
  std::mt19937 rng(32);
  const ir::Tensor x = random_tensor(rng, {2, 3, 5, 6});
  for (int64_t align : {0, 1}) {
    ir::Tensor grid(ir::DType::kFloat32, {2, 5, 6, 2});
    for (int64_t i = 0; i < 2 * 30; ++i) {
      grid.data<float>()[2 * i] = normalised(static_cast<double>(i % 6), 6, align != 0);
      grid.data<float>()[2 * i + 1] = normalised(static_cast<double>(i / 6 % 5), 5, align != 0);
    }
    for (const std::string mode : {"bilinear", "nearest", "bicubic"}) {
      for (bool reference : {true, false}) {
        const auto out = run_kernel(grid_node(mode, "zeros", align), 16, {&x, &grid}, reference);
        ASSERT_EQ(out.size(), 1u);
        EXPECT_LT(rel_l2(out[0], x), 1e-6) << mode << " align " << align;
      }
    }
  }
}

TEST(GridSample, BilinearReproducesALinearImageInside) {
  const ir::Tensor x = linear_image(1, 2, 7, 9, 0.75, 1.5);
  std::mt19937 rng(33);
  std::uniform_real_distribution<double> px(0.0, 8.0), py(0.0, 6.0);
  ir::Tensor grid(ir::DType::kFloat32, {1, 4, 5, 2});
  std::vector<double> want;
  for (int64_t i = 0; i < 20; ++i) {
    const double x_pix = px(rng), y_pix = py(rng);
    grid.data<float>()[2 * i] = normalised(x_pix, 9, true);
    grid.data<float>()[2 * i + 1] = normalised(y_pix, 7, true);
    want.push_back(0.75 * x_pix + 1.5 * y_pix);
  }
  for (const std::string padding : {"zeros", "border", "reflection"}) {
    const auto out = run_kernel(grid_node("bilinear", padding, 1), 16, {&x, &grid}, true);
    ASSERT_EQ(out.size(), 1u);
    for (int64_t c = 0; c < 2; ++c) {
      for (int64_t i = 0; i < 20; ++i) {
        EXPECT_NEAR(out[0].as_double(c * 20 + i), want[static_cast<size_t>(i)] + 3.0 * c, 1e-4);
      }
    }
  }
}

TEST(GridSample, PaddingOutsideThePlane) {
  // A 1x4 row 10, 20, 30, 40 sampled with nearest at pixel columns -2 and 5 (align_corners).
  const ir::Tensor x = floats({1, 1, 1, 4}, {10, 20, 30, 40});
  const ir::Tensor grid = floats({1, 1, 2, 2}, {normalised(-2, 4, true), -1.0f,
                                                normalised(5, 4, true), -1.0f});
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"zeros", {0, 0}}, {"border", {10, 40}}, {"reflection", {30, 20}}};
  for (const auto& [padding, want] : cases) {
    const auto out = run_kernel(grid_node("nearest", padding, 1), 16, {&x, &grid}, true);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 2), want)
        << padding;
  }
}

TEST(GridSample, OnePixelAxisWithAlignCornersReadsThatPixelFromAnyPoint) {
  // RAFT's coarsest level normalises by W - 1 = 0: its grid holds infinities.
  const ir::Tensor x = floats({1, 1, 1, 1}, {7});
  const float inf = std::numeric_limits<float>::infinity();
  const ir::Tensor grid = floats({1, 1, 3, 2}, {-inf, 3, inf, -inf, 0.25f, 0});
  for (bool reference : {true, false}) {
    const auto out = run_kernel(grid_node("bilinear", "zeros", 1), 16, {&x, &grid}, reference);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 3),
              (std::vector<float>{7, 7, 7}));
  }
}

TEST(GridSample, FastBilinearMatchesTheReferenceOnAnyThreads) {
  std::mt19937 rng(34);
  for (int trial = 0; trial < 4; ++trial) {
    std::uniform_int_distribution<int64_t> dim(1, 9);
    const int64_t n = dim(rng) % 3 + 1, c = dim(rng), h = dim(rng), w = dim(rng);
    const ir::Tensor x = random_tensor(rng, {n, c, h, w});
    const ir::Tensor grid = random_tensor(rng, {n, dim(rng), dim(rng), 2}, -1.3f, 1.3f);
    for (const std::string padding : {"zeros", "border", "reflection"}) {
      for (int64_t align : {0, 1}) {
        const auto node = grid_node("bilinear", padding, align);
        const auto fast = run_kernel(node, 16, {&x, &grid}, false);
        const auto ref = run_kernel(node, 16, {&x, &grid}, true);
        ASSERT_EQ(fast.size(), 1u);
        ASSERT_EQ(ref.size(), 1u);
        EXPECT_LE(rel_l2(fast[0], ref[0]), 1e-5) << padding << " align " << align;
        expect_same_on_threads(node, 16, {&x, &grid}, false);
        expect_same_on_threads(node, 16, {&x, &grid}, true);
      }
    }
  }
}

TEST(GridSample, MismatchedGridIsNamed) {
  const ir::Tensor x(ir::DType::kFloat32, {1, 2, 4, 4});
  const ir::Tensor grid(ir::DType::kFloat32, {1, 3, 3, 3});
  const std::string err = kernel_error(grid_node("bilinear", "zeros", 0), 16, {&x, &grid});
  EXPECT_NE(err.find("[1, 2, 4, 4]"), std::string::npos) << err;
  EXPECT_NE(err.find("[1, 3, 3, 3]"), std::string::npos) << err;
}

}  // namespace
}  // namespace ptq::runtime::testing
