// Resize against a direct 2-D reference (not separable passes): every nearest_mode with every
// coordinate transformation mode, bilinear with each coordinate mode, scales and sizes.
#include <cmath>

#include "op_test_util.h"

namespace ptq::test {
namespace {

double coordinate(const std::string& mode, int64_t x, double scale, int64_t in, int64_t out) {
  const double xo = static_cast<double>(x);
  // An axis with scale 1 is not resized in any mode (ONNX Runtime's behaviour; it matters only
  // for tf_half_pixel_for_nn, which would otherwise shift the axis).
  if (scale == 1.0 && in == out) return xo;
  if (mode == "half_pixel") return (xo + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
  // ONNX's reference divides by the resized length before rounding down (in * scale).
  if (mode == "align_corners") {
    const double len = static_cast<double>(in) * scale;
    return len == 1.0 ? 0.0 : xo * static_cast<double>(in - 1) / (len - 1);
  }
  if (mode == "tf_half_pixel_for_nn") return (xo + 0.5) / scale;
  return xo / scale;  // asymmetric
}

int64_t nearest(const std::string& mode, double x, int64_t in) {
  double r;
  if (mode == "floor") r = std::floor(x);
  else if (mode == "ceil") r = std::ceil(x);
  else if (mode == "round_prefer_ceil") r = std::floor(x + 0.5);
  else r = std::ceil(x - 0.5);  // round_prefer_floor
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in - 1);
}

// Reference over [N, C, H, W] resizing H and W.
std::vector<double> reference(const ir::Tensor& x, int64_t oh, int64_t ow, double sh, double sw,
                              const std::string& mode, const std::string& coord,
                              const std::string& nearest_mode) {
  const int64_t nc = x.dim(0) * x.dim(1), h = x.dim(2), w = x.dim(3);
  std::vector<double> r;
  for (int64_t p = 0; p < nc; ++p) {
    auto at = [&](int64_t i, int64_t j) { return x.as_double((p * h + i) * w + j); };
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        const double y = coordinate(coord, i, sh, h, oh);
        const double z = coordinate(coord, j, sw, w, ow);
        if (mode == "nearest") {
          r.push_back(at(nearest(nearest_mode, y, h), nearest(nearest_mode, z, w)));
          continue;
        }
        const double yc = std::clamp(y, 0.0, static_cast<double>(h - 1));
        const double zc = std::clamp(z, 0.0, static_cast<double>(w - 1));
        const auto y0 = static_cast<int64_t>(std::floor(yc)),
                   z0 = static_cast<int64_t>(std::floor(zc));
        const int64_t y1 = std::min(y0 + 1, h - 1), z1 = std::min(z0 + 1, w - 1);
        const double dy = yc - static_cast<double>(y0), dz = zc - static_cast<double>(z0);
        r.push_back((1 - dy) * (1 - dz) * at(y0, z0) + (1 - dy) * dz * at(y0, z1) +
                    dy * (1 - dz) * at(y1, z0) + dy * dz * at(y1, z1));
      }
    }
  }
  return r;
}

TEST(Resize, NearestAndLinearEveryCoordinateModeMatchReference) {
  std::mt19937 rng(31);
  const ir::Tensor x = random_tensor(rng, {1, 2, 4, 5}, -2.0f, 2.0f);
  const char* coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                          "tf_half_pixel_for_nn"};
  const char* nearest_modes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  const std::pair<float, float> scales[] = {{2.0f, 3.0f}, {0.5f, 0.6f}, {1.5f, 0.8f}, {1.0f, 2.5f}};
  for (const auto& [sh, sw] : scales) {
    const int64_t oh = static_cast<int64_t>(std::floor(4 * sh)),
                  ow = static_cast<int64_t>(std::floor(5 * sw));
    const ir::Tensor sc = ir::make_tensor<float>({4}, {1.0f, 1.0f, sh, sw});
    const ir::Tensor sizes = int64s({1, 2, oh, ow});
    for (const char* coord : coords) {
      for (const char* nm : nearest_modes) {
        SCOPED_TRACE(fmt::format("{} {} {}x{}", coord, nm, sh, sw));
        const ir::Node node = op("Resize")
                                  .s("mode", "nearest")
                                  .s("coordinate_transformation_mode", coord)
                                  .s("nearest_mode", nm)
                                  .build(3);
        const auto want = reference(x, oh, ow, sh, sw, "nearest", coord, nm);
        expect_close(run1(node, {&x, nullptr, &sc}, 13), want, {1, 2, oh, ow}, 0, 0);
      }
      if (std::string(coord) == "tf_half_pixel_for_nn") continue;
      SCOPED_TRACE(fmt::format("linear {}", coord));
      const ir::Node lin =
          op("Resize").s("mode", "linear").s("coordinate_transformation_mode", coord).build(4);
      expect_close(run1(lin, {&x, nullptr, &sc}, 13),
                   reference(x, oh, ow, sh, sw, "linear", coord, ""), {1, 2, oh, ow}, 1e-5, 1e-6);
      // With sizes, the scale is out / in.
      expect_close(run1(lin, {&x, nullptr, nullptr, &sizes}, 13),
                   reference(x, oh, ow, double(oh) / 4, double(ow) / 5, "linear", coord, ""),
                   {1, 2, oh, ow}, 1e-5, 1e-6);
    }
  }
}

TEST(Resize, Opset10UsesScalesInputAndAsymmetricCoordinates) {
  const ir::Tensor x = ir::make_tensor<float>({1, 1, 2, 2}, {1, 2, 3, 4});
  const ir::Tensor sc = ir::make_tensor<float>({4}, {1, 1, 2, 2});
  // Upsample-style: each pixel repeated.
  expect_close(run1(op("Resize").s("mode", "nearest").build(2), {&x, &sc}, 10),
               {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, {1, 1, 4, 4}, 0, 0);
}

TEST(Resize, Opset18AxesAndAspectRatioPolicy) {
  std::mt19937 rng(32);
  const ir::Tensor x = random_tensor(rng, {1, 1, 4, 6}, -2.0f, 2.0f);
  const ir::Tensor sizes = int64s({8, 8});
  // not_larger: one scale min(8/4, 8/6) = 4/3 for both axes → [5, 8].
  const ir::Node node = op("Resize").s("mode", "linear").ints("axes", {2, 3})
                            .s("keep_aspect_ratio_policy", "not_larger").build(4);
  const ir::Tensor y = run1(node, {&x, nullptr, nullptr, &sizes}, 18);
  EXPECT_EQ(y.shape(), (ir::Shape{1, 1, 5, 8}));
  expect_close(y, reference(x, 5, 8, 4.0 / 3, 4.0 / 3, "linear", "half_pixel", ""), {1, 1, 5, 8},
               1e-5, 1e-6);
}

}  // namespace
}  // namespace ptq::test
