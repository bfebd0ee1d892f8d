// GridSample (opsets 16, 20) on 4-D inputs: output[n, c, h, w] samples X[n, c] at the grid's
// normalised point (x, y) = grid[n, h, w] with bilinear, nearest (half to even) or bicubic
// (A = -0.75) interpolation. As in ONNX Runtime (and PyTorch), padding applies to each tap an
// interpolation reads: zeros outside, the border pixel, or the pixel reflected at the edges
// (pixel centres with align_corners, pixel edges without). The grid point is mapped to pixels
// in the input's type, as ONNX Runtime does, so nearest and floor pick the same pixel; the
// reference interpolates in double. The fast bilinear path (float) plans each output point's
// taps once for all channels.
#include <algorithm>
#include <cmath>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

enum class Interp { kLinear, kNearest, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

struct GridAttrs {
  Interp mode = Interp::kLinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};

// The plane being sampled and the edges reflection mirrors at.
struct Plane {
  int64_t height = 0, width = 0;
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
};

Plane plane_of(int64_t height, int64_t width, bool align_corners) {
  const double shift = align_corners ? 0.0 : 0.5;
  return {height, width, -shift, static_cast<double>(width) - 1 + shift, -shift,
          static_cast<double>(height) - 1 + shift};
}

// Folds x into [lo, hi] by reflecting at the edges as often as needed.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo || x > hi) {
    const double d = x < lo ? lo - x : x - hi;
    const auto flips = static_cast<int64_t>(d / range);
    const double r = d - static_cast<double>(flips) * range;
    const bool toward_hi = (x < lo) == (flips % 2 == 0);
    return toward_hi ? lo + r : hi - r;
  }
  return x;
}

// The flat offset of pixel (row, col) after padding; -1 when it reads as zero.
int64_t tap(const Plane& p, Padding padding, int64_t row, int64_t col) {
  if (padding == Padding::kZeros) {
    const bool inside = row >= 0 && row < p.height && col >= 0 && col < p.width;
    return inside ? row * p.width + col : -1;
  }
  if (padding == Padding::kBorder) {
    return std::clamp<int64_t>(row, 0, p.height - 1) * p.width +
           std::clamp<int64_t>(col, 0, p.width - 1);
  }
  const auto r = static_cast<int64_t>(reflect(static_cast<double>(row), p.y_lo, p.y_hi));
  const auto c = static_cast<int64_t>(reflect(static_cast<double>(col), p.x_lo, p.x_hi));
  return std::clamp<int64_t>(r, 0, p.height - 1) * p.width + std::clamp<int64_t>(c, 0, p.width - 1);
}

// The pixel coordinate of normalised n in [-1, 1] along an axis of `len` pixels, in T. With
// align_corners an axis of one pixel maps every n to it, infinite n included (ONNX Runtime's
// result; RAFT's coarsest correlation level divides by len - 1 = 0). A NaN lands outside and
// huge values are clamped, so every coordinate converts to an integer.
template <typename T>
double denormalize(T n, int64_t len, bool align_corners) {
  if (align_corners && len == 1) return 0.0;
  const auto l = static_cast<T>(len);
  const T x = align_corners ? (n + 1) / T(2) * (l - 1) : ((n + 1) * l - 1) / T(2);
  constexpr double kFar = 1e9;
  return std::isnan(x) ? -kFar : std::clamp(static_cast<double>(x), -kFar, kFar);
}

void cubic_coeffs(double t, double c[4]) {
  constexpr double A = -0.75;
  auto near = [](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  auto far = [](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };
  c[0] = far(t + 1);
  c[1] = near(t);
  c[2] = near(1 - t);
  c[3] = far(2 - t);
}

namespace reference {

template <typename T>
double sample(const GridAttrs& a, const Plane& p, const T* img, double x, double y) {
  auto at = [&](int64_t row, int64_t col) {
    const int64_t o = tap(p, a.padding, row, col);
    return o < 0 ? 0.0 : static_cast<double>(img[o]);
  };
  if (a.mode == Interp::kNearest) {
    return at(static_cast<int64_t>(std::nearbyint(y)), static_cast<int64_t>(std::nearbyint(x)));
  }
  const double fx = std::floor(x), fy = std::floor(y);
  const auto x0 = static_cast<int64_t>(fx), y0 = static_cast<int64_t>(fy);
  if (a.mode == Interp::kLinear) {
    const double dx = x - fx, dy = y - fy;
    return (1 - dy) * ((1 - dx) * at(y0, x0) + dx * at(y0, x0 + 1)) +
           dy * ((1 - dx) * at(y0 + 1, x0) + dx * at(y0 + 1, x0 + 1));
  }
  double cx[4], cy[4];
  cubic_coeffs(x - fx, cx);
  cubic_coeffs(y - fy, cy);
  double sum = 0;
  for (int i = 0; i < 4; ++i) {
    double row = 0;
    for (int j = 0; j < 4; ++j) row += cx[j] * at(y0 - 1 + i, x0 - 1 + j);
    sum += cy[i] * row;
  }
  return sum;
}

template <typename T>
void grid_sample(const GridAttrs& a, const ir::Tensor& x, const ir::Tensor& grid, ir::Tensor& y,
                 int threads) {
  const int64_t channels = x.dim(1), out_h = grid.dim(1), out_w = grid.dim(2);
  const Plane p = plane_of(x.dim(2), x.dim(3), a.align_corners);
  const int64_t points = out_h * out_w;
  parallel_for(threads, x.dim(0) * channels, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const T* img = x.data<T>() + nc * p.height * p.width;
      const T* g = grid.data<T>() + nc / channels * points * 2;
      T* dst = y.data<T>() + nc * points;
      for (int64_t i = 0; i < points; ++i) {
        const double px = denormalize(g[2 * i], p.width, a.align_corners);
        const double py = denormalize(g[2 * i + 1], p.height, a.align_corners);
        dst[i] = static_cast<T>(sample(a, p, img, px, py));
      }
    }
  });
}

}  // namespace reference

namespace fast {

// The four taps of one bilinear output point (-1: reads zero) and their weights.
struct Taps {
  int64_t at[4];
  float w[4];
};

Taps plan_point(const GridAttrs& a, const Plane& p, const float* g) {
  const double x = denormalize(g[0], p.width, a.align_corners);
  const double y = denormalize(g[1], p.height, a.align_corners);
  const auto x0 = static_cast<int64_t>(std::floor(x)), y0 = static_cast<int64_t>(std::floor(y));
  const auto dx = static_cast<float>(x - std::floor(x)), dy = static_cast<float>(y - std::floor(y));
  return {{tap(p, a.padding, y0, x0), tap(p, a.padding, y0, x0 + 1),
           tap(p, a.padding, y0 + 1, x0), tap(p, a.padding, y0 + 1, x0 + 1)},
          {(1 - dy) * (1 - dx), (1 - dy) * dx, dy * (1 - dx), dy * dx}};
}

void grid_sample_bilinear(const GridAttrs& a, const ir::Tensor& x, const ir::Tensor& grid,
                          ir::Tensor& y, int threads) {
  const int64_t batch = x.dim(0), channels = x.dim(1);
  const int64_t points = grid.dim(1) * grid.dim(2);
  const Plane p = plane_of(x.dim(2), x.dim(3), a.align_corners);
  std::vector<Taps> plan(static_cast<size_t>(batch * points));
  parallel_for(threads, batch * points, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      plan[static_cast<size_t>(i)] = plan_point(a, p, grid.data<float>() + 2 * i);
    }
  }, 1024);
  parallel_for(threads, batch * channels, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const float* img = x.data<float>() + nc * p.height * p.width;
      const Taps* t = plan.data() + nc / channels * points;
      float* dst = y.data<float>() + nc * points;
      for (int64_t i = 0; i < points; ++i) {
        float v = 0;
        for (int k = 0; k < 4; ++k) v += t[i].at[k] < 0 ? 0.0f : t[i].w[k] * img[t[i].at[k]];
        dst[i] = v;
      }
    }
  });
}

}  // namespace fast

Expected<GridAttrs> read_attrs(const ir::Node& node) {
  GridAttrs a;
  a.align_corners = node.attr_int("align_corners", 0) != 0;
  // Opset 20 renamed bilinear and bicubic to linear and cubic.
  const std::string mode = node.attr_string("mode", "bilinear");
  if (mode == "bilinear" || mode == "linear") {
    a.mode = Interp::kLinear;
  } else if (mode == "nearest") {
    a.mode = Interp::kNearest;
  } else if (mode == "bicubic" || mode == "cubic") {
    a.mode = Interp::kCubic;
  } else {
    return node_error(node, "mode '{}' is unknown", mode);
  }
  const std::string padding = node.attr_string("padding_mode", "zeros");
  if (padding == "zeros") {
    a.padding = Padding::kZeros;
  } else if (padding == "border") {
    a.padding = Padding::kBorder;
  } else if (padding == "reflection") {
    a.padding = Padding::kReflection;
  } else {
    return node_error(node, "padding_mode '{}' is unknown", padding);
  }
  return a;
}

Status check_shapes(const ir::Node& node, const ir::Tensor& x, const ir::Tensor& grid) {
  const bool ok = x.rank() == 4 && grid.rank() == 4 && grid.dim(0) == x.dim(0) &&
                  grid.dim(3) == 2 && (x.size() > 0 || grid.dim(1) * grid.dim(2) == 0);
  if (ok) return Status::ok();
  return node_error(node, "X {} and grid {} do not match [N, C, H, W] and [N, H_out, W_out, 2] "
                    "(4-D sampling only)",
                    ir::shape_str(x.shape()), ir::shape_str(grid.shape()));
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_grid_sample(const KernelContext& ctx) {
  PTQ_ASSIGN_OR_RETURN(const GridAttrs attrs, read_attrs(ctx.node));
  auto run = [node = ctx.node, threads = ctx.threads, attrs, reference = ctx.reference](
                 Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& grid = *in[1];
    PTQ_RETURN_IF_ERROR(check_shapes(node, x, grid));
    if (grid.dtype() != x.dtype()) {
      return node_error(node, "X is {} but grid {}", ir::dtype_name(x.dtype()),
                        ir::dtype_name(grid.dtype()));
    }
    out[0] = alloc.allocate(x.dtype(), {x.dim(0), x.dim(1), grid.dim(1), grid.dim(2)});
    if (out[0].size() == 0) return Status::ok();
    if (!reference && attrs.mode == Interp::kLinear && x.dtype() == ir::DType::kFloat32) {
      fast::grid_sample_bilinear(attrs, x, grid, out[0], threads);
      return Status::ok();
    }
    const bool ok = dispatch_float(x.dtype(), [&](auto tag) {
      reference::grid_sample<typename decltype(tag)::type>(attrs, x, grid, out[0], threads);
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

}  // namespace ptq::runtime::cpu
