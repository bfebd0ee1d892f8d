// Resize (opsets 10–19): nearest, linear and cubic modes with every coordinate transformation
// mode, from scales or sizes. The N-D resize is done one axis at a time: each pass maps
// [outer, in_len, inner] to [outer, out_len, inner] with per-output-position taps (input index,
// weight). Linear and cubic interpolation are separable, so this equals the N-D formula.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

enum class Mode { kNearest, kLinear, kCubic };

struct ResizeAttrs {
  Mode mode = Mode::kNearest;
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  std::vector<int64_t> axes;  // opset 18
  std::string aspect_policy = "stretch";
  int64_t opset = 0;
};

struct Tap {
  int64_t index;
  double weight;
};

// Taps of one output position; empty means "extrapolation value" (tf_crop_and_resize).
using Taps = std::vector<Tap>;

// `lo` is the resized length as ONNX's reference implementation uses it in align_corners and
// tf_crop_and_resize: the output length when sizes are given, in_len * scale (not rounded
// down) when scales are. `len_out` is the integer output length.
double source_coordinate(const ResizeAttrs& a, int64_t x, double scale, int64_t len_in,
                         int64_t len_out, double lo, double roi_start, double roi_end) {
  const double xo = static_cast<double>(x);
  const auto li = static_cast<double>(len_in);
  const std::string& m = a.coord;
  if (m == "asymmetric") return xo / scale;
  if (m == "align_corners") return lo == 1.0 ? 0.0 : xo * (li - 1) / (lo - 1);
  if (m == "pytorch_half_pixel") return len_out > 1 ? (xo + 0.5) / scale - 0.5 : 0.0;
  if (m == "tf_half_pixel_for_nn") return (xo + 0.5) / scale;
  if (m == "half_pixel_symmetric") {
    const double adjustment = static_cast<double>(len_out) / (scale * li);
    const double center = li / 2;
    return center * (1 - adjustment) + (xo + 0.5) / scale - 0.5;
  }
  if (m == "tf_crop_and_resize") {
    return lo != 1.0 ? roi_start * (li - 1) + xo * (roi_end - roi_start) * (li - 1) / (lo - 1)
                       : 0.5 * (roi_start + roi_end) * (li - 1);
  }
  return (xo + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const ResizeAttrs& a, double x, double scale) {
  const std::string& m = a.nearest;
  if (a.opset < 11) {
    // Resize-10 had no nearest_mode; ONNX Runtime rounds down when upsampling, up otherwise.
    return static_cast<int64_t>(scale < 1 ? std::ceil(x) : std::floor(x));
  }
  if (m == "floor") return static_cast<int64_t>(std::floor(x));
  if (m == "ceil") return static_cast<int64_t>(std::ceil(x));
  const double f = std::floor(x);
  if (x - f == 0.5) return static_cast<int64_t>(m == "round_prefer_ceil" ? f + 1 : f);
  return static_cast<int64_t>(std::round(x));
}

void cubic_weights(double t, double A, double w[4]) {
  auto near = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };
  auto far = [A](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

std::vector<Taps> axis_taps(const ResizeAttrs& a, int64_t len_in, int64_t len_out, double scale,
                            double length_resized, double roi_start, double roi_end) {
  std::vector<Taps> taps(static_cast<size_t>(len_out));
  auto clamp_index = [len_in](int64_t i) { return std::clamp<int64_t>(i, 0, len_in - 1); };
  for (int64_t o = 0; o < len_out; ++o) {
    const double x =
        source_coordinate(a, o, scale, len_in, len_out, length_resized, roi_start, roi_end);
    Taps& t = taps[static_cast<size_t>(o)];
    if (a.coord == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(len_in - 1))) {
      continue;  // extrapolated
    }
    if (a.mode == Mode::kNearest) {
      t.push_back({clamp_index(nearest_index(a, x, scale)), 1.0});
    } else if (a.mode == Mode::kLinear) {
      const double xc = std::clamp(x, 0.0, static_cast<double>(len_in - 1));
      const auto i0 = static_cast<int64_t>(std::floor(xc));
      const double r = xc - static_cast<double>(i0);
      t.push_back({i0, 1 - r});
      if (r != 0) t.push_back({clamp_index(i0 + 1), r});
    } else {
      const auto i0 = static_cast<int64_t>(std::floor(x));
      double w[4];
      cubic_weights(x - static_cast<double>(i0), a.cubic_a, w);
      double sum = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t i = i0 - 1 + k;
        if (a.exclude_outside && (i < 0 || i >= len_in)) continue;
        t.push_back({clamp_index(i), w[k]});
        sum += w[k];
      }
      if (a.exclude_outside && sum != 0) {
        for (Tap& tap : t) tap.weight /= sum;
      }
    }
  }
  return taps;
}

// The taps of every output position of one axis in flat arrays, `per` slots a position, so
// that the inner loops carry no per-position vector. A position uses its first count[o] slots
// (0: extrapolated, tf_crop_and_resize); the rest are never read, so an infinite input value
// is never multiplied by a padding weight of 0.
template <typename Acc>
struct FlatTaps {
  size_t per = 1;
  std::vector<int64_t> index;
  std::vector<Acc> weight;
  std::vector<uint8_t> count;
};

template <typename Acc>
FlatTaps<Acc> flatten(const std::vector<Taps>& taps) {
  FlatTaps<Acc> f;
  for (const Taps& t : taps) f.per = std::max(f.per, t.size());
  f.index.assign(taps.size() * f.per, 0);
  f.weight.assign(taps.size() * f.per, Acc(0));
  for (size_t o = 0; o < taps.size(); ++o) {
    f.count.push_back(static_cast<uint8_t>(taps[o].size()));
    for (size_t k = 0; k < taps[o].size(); ++k) {
      f.index[o * f.per + k] = taps[o][k].index;
      f.weight[o * f.per + k] = static_cast<Acc>(taps[o][k].weight);
    }
  }
  return f;
}

// One output row of `inner` values: the weighted sum of the rows its taps name.
template <typename T, typename Acc>
void blend_row(const T* base, int64_t inner, const int64_t* index, const Acc* weight,
               size_t count, T* out) {
  if (count == 2) {  // linear: the common case, a loop the compiler vectorises
    const T* a = base + index[0] * inner;
    const T* b = base + index[1] * inner;
    for (int64_t i = 0; i < inner; ++i) {
      out[i] = static_cast<T>(weight[0] * static_cast<Acc>(a[i]) +
                              weight[1] * static_cast<Acc>(b[i]));
    }
    return;
  }
  for (int64_t i = 0; i < inner; ++i) {
    Acc acc = 0;
    for (size_t k = 0; k < count; ++k) {
      acc += weight[k] * static_cast<Acc>(base[index[k] * inner + i]);
    }
    out[i] = static_cast<T>(acc);
  }
}

// One row of the last axis: out[j] from the taps of position j.
template <typename T, typename Acc>
void gather_row(const T* base, const FlatTaps<Acc>& f, bool nearest, T extrapolation,
                int64_t len_out, T* out) {
  for (int64_t j = 0; j < len_out; ++j) {
    const size_t at = static_cast<size_t>(j) * f.per;
    const size_t count = f.count[static_cast<size_t>(j)];
    if (count == 0 || nearest) {
      out[j] = count == 0 ? extrapolation : base[f.index[at]];
      continue;
    }
    Acc acc = f.weight[at] * static_cast<Acc>(base[f.index[at]]);
    for (size_t k = 1; k < count; ++k) {
      acc += f.weight[at + k] * static_cast<Acc>(base[f.index[at + k]]);
    }
    out[j] = static_cast<T>(acc);
  }
}

// One axis pass: x viewed as [outer, len_in, inner] into y as [outer, len_out, inner]. Float
// tensors interpolate in float (as ONNX Runtime does), others in double.
template <typename T>
void resize_axis(const ir::Tensor& x, ir::Tensor& y, size_t axis, const std::vector<Taps>& taps,
                 bool nearest, T extrapolation, int threads) {
  using Acc = std::conditional_t<std::is_same_v<T, float>, float, double>;
  const ir::Shape& s = x.shape();
  const int64_t outer = dims_product(s, 0, axis);
  const int64_t inner = dims_product(s, axis + 1, s.size());
  const int64_t len_in = s[axis];
  const auto len_out = static_cast<int64_t>(taps.size());
  const FlatTaps<Acc> f = flatten<Acc>(taps);
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  if (inner == 1) {  // the last axis: whole rows, one gathered value a position
    parallel_for(threads, outer, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        gather_row(src + o * len_in, f, nearest, extrapolation, len_out, dst + o * len_out);
      }
    }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(len_out, 1)));
    return;
  }
  parallel_for(threads, outer * len_out, [&](int64_t b, int64_t e) {
    int64_t o = b / len_out, j = b % len_out;
    for (int64_t r = b; r < e; ++r, ++j) {
      if (j == len_out) j = 0, ++o;
      T* out = dst + r * inner;
      const auto at = static_cast<size_t>(j) * f.per;
      const T* base = src + o * len_in * inner;
      const size_t count = f.count[static_cast<size_t>(j)];
      if (count == 0) {
        std::fill(out, out + inner, extrapolation);
      } else if (nearest) {
        std::copy(base + f.index[at] * inner, base + (f.index[at] + 1) * inner, out);
      } else {
        blend_row(base, inner, &f.index[at], &f.weight[at], count, out);
      }
    }
  }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)));
}

Expected<ResizeAttrs> parse_attrs(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  ResizeAttrs a;
  a.opset = ctx.opset;
  const std::string mode = node.attr_string("mode", "nearest");
  if (mode == "nearest") a.mode = Mode::kNearest;
  else if (mode == "linear" || mode == "bilinear") a.mode = Mode::kLinear;
  else if (mode == "cubic" || mode == "bicubic") a.mode = Mode::kCubic;
  else return node_error(node, "unknown mode '{}'", mode);
  a.coord = node.attr_string("coordinate_transformation_mode",
                             ctx.opset < 11 ? "asymmetric" : "half_pixel");
  a.nearest = node.attr_string("nearest_mode", "round_prefer_floor");
  a.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  a.extrapolation = node.attr_float("extrapolation_value", 0.0f);
  a.axes = node.attr_ints("axes", {});
  a.aspect_policy = node.attr_string("keep_aspect_ratio_policy", "stretch");
  if (node.attr_int("antialias", 0) != 0 && a.mode != Mode::kNearest) {
    return node_error(node, "antialias is not supported");
  }
  static const char* kCoords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                  "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                  "tf_crop_and_resize"};
  if (std::find(std::begin(kCoords), std::end(kCoords), a.coord) == std::end(kCoords)) {
    return node_error(node, "unknown coordinate_transformation_mode '{}'", a.coord);
  }
  return a;
}

struct Plan {
  ir::Shape out;
  std::vector<double> scales;
  std::vector<double> length_resized;  // see source_coordinate
  std::vector<double> roi;  // 2 * rank: starts then ends
};

Expected<Plan> plan_resize(const ir::Node& node, const ResizeAttrs& a, const ir::Tensor& x,
                           Inputs in) {
  const int64_t rank = x.rank();
  const ir::Tensor* roi_t = a.opset >= 11 ? input_or_null(in, 1) : nullptr;
  const ir::Tensor* scales_t = input_or_null(in, a.opset >= 11 ? 2 : 1);
  const ir::Tensor* sizes_t = a.opset >= 11 ? input_or_null(in, 3) : nullptr;
  if (scales_t != nullptr && scales_t->size() == 0) scales_t = nullptr;
  if (sizes_t != nullptr && sizes_t->size() == 0) sizes_t = nullptr;
  if ((scales_t == nullptr) == (sizes_t == nullptr)) {
    return node_error(node, "exactly one of scales and sizes must be given");
  }
  std::vector<int64_t> axes;
  for (int64_t v : a.axes) {
    PTQ_ASSIGN_OR_RETURN(int64_t n, normalize_axis(node, v, rank));
    axes.push_back(n);
  }
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t na = axes.size();
  Plan p;
  p.out = x.shape();
  p.scales.assign(static_cast<size_t>(rank), 1.0);
  p.roi.assign(static_cast<size_t>(2 * rank), 0.0);
  p.length_resized.assign(p.out.begin(), p.out.end());
  for (int64_t d = 0; d < rank; ++d) p.roi[static_cast<size_t>(rank + d)] = 1.0;
  if (roi_t != nullptr && roi_t->size() == static_cast<int64_t>(2 * na)) {
    for (size_t i = 0; i < na; ++i) {
      p.roi[static_cast<size_t>(axes[i])] = roi_t->as_double(static_cast<int64_t>(i));
      p.roi[static_cast<size_t>(rank + axes[i])] = roi_t->as_double(static_cast<int64_t>(na + i));
    }
  }
  if (scales_t != nullptr) {
    if (scales_t->size() != static_cast<int64_t>(na)) {
      return node_error(node, "scales has {} entries for {} axes", scales_t->size(), na);
    }
    for (size_t i = 0; i < na; ++i) {
      const auto d = static_cast<size_t>(axes[i]);
      const double s = scales_t->as_double(static_cast<int64_t>(i));
      if (!(s > 0)) return node_error(node, "scale {} is not positive", s);
      p.scales[d] = s;
      p.out[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.shape()[d]) * s));
      p.length_resized[d] = static_cast<double>(x.shape()[d]) * s;
    }
    return p;
  }
  if (sizes_t->size() != static_cast<int64_t>(na)) {
    return node_error(node, "sizes has {} entries for {} axes", sizes_t->size(), na);
  }
  std::vector<double> ratio(na);
  for (size_t i = 0; i < na; ++i) {
    ratio[i] = static_cast<double>(sizes_t->as_int64(static_cast<int64_t>(i))) /
               static_cast<double>(x.shape()[static_cast<size_t>(axes[i])]);
  }
  if (a.aspect_policy != "stretch") {
    const bool larger = a.aspect_policy == "not_smaller";
    double r = ratio[0];
    for (double v : ratio) r = larger ? std::max(r, v) : std::min(r, v);
    for (size_t i = 0; i < na; ++i) {
      const auto d = static_cast<size_t>(axes[i]);
      ratio[i] = r;
      p.out[d] = static_cast<int64_t>(std::round(r * static_cast<double>(x.shape()[d])));
    }
  } else {
    for (size_t i = 0; i < na; ++i) {
      p.out[static_cast<size_t>(axes[i])] = sizes_t->as_int64(static_cast<int64_t>(i));
    }
  }
  for (size_t i = 0; i < na; ++i) {
    const auto d = static_cast<size_t>(axes[i]);
    p.scales[d] = ratio[i];
    p.length_resized[d] = static_cast<double>(p.out[d]);
  }
  return p;
}

template <typename T>
Status resize_typed(const ResizeAttrs& a, const ir::Tensor& x, const Plan& p, ir::Tensor& y,
                    int threads) {
  const size_t rank = x.shape().size();
  // An axis with scale 1 is left alone whatever the coordinate mode (as ONNX Runtime does):
  // tf_half_pixel_for_nn with a ceil rounding would otherwise shift it by one. A crop may still
  // move an axis of unchanged length.
  auto resized = [&](size_t d) {
    return x.shape()[d] != p.out[d] || p.scales[d] != 1.0 || a.coord == "tf_crop_and_resize";
  };
  // The innermost axis, whose pass gathers one value at a time, goes first when it grows:
  // its pass then writes the smaller tensor, and the growing outer axes blend whole rows.
  std::vector<size_t> order;
  for (size_t d = 0; d < rank; ++d) {
    if (resized(d)) order.push_back(d);
  }
  if (order.size() > 1 && order.back() == rank - 1 && p.out[rank - 1] >= x.shape()[rank - 1]) {
    std::rotate(order.begin(), order.end() - 1, order.end());
  }
  const size_t last = order.empty() ? rank : order.back();  // the last pass writes y itself
  ir::Tensor cur = x.view();
  ir::Tensor next;
  for (size_t d : order) {
    const int64_t len_in = x.shape()[d];
    const int64_t len_out = p.out[d];
    const std::vector<Taps> taps =
        axis_taps(a, len_in, len_out, p.scales[d], p.length_resized[d], p.roi[d], p.roi[rank + d]);
    const bool nearest = a.mode == Mode::kNearest;
    const auto extrapolation = static_cast<T>(a.extrapolation);
    if (d == last) {
      resize_axis<T>(cur, y, d, taps, nearest, extrapolation, threads);
      return Status::ok();
    }
    ir::Shape shape = cur.shape();
    shape[d] = len_out;
    next = ir::Tensor(x.dtype(), shape);
    resize_axis<T>(cur, next, d, taps, nearest, extrapolation, threads);
    cur = std::move(next);
  }
  std::copy(cur.data<T>(), cur.data<T>() + cur.size(), y.data<T>());  // nothing resized
  return Status::ok();
}

Expected<std::unique_ptr<Kernel>> make_resize_kernel(const KernelContext& ctx, ResizeAttrs attrs) {
  auto run = [node = ctx.node, threads = ctx.threads, attrs](Inputs in, Outputs out,
                                                             Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    PTQ_ASSIGN_OR_RETURN(Plan plan, plan_resize(node, attrs, x, in));
    for (int64_t d : plan.out) {
      if (d < 0) return node_error(node, "output shape {} is invalid", ir::shape_str(plan.out));
    }
    out[0] = alloc.allocate(x.dtype(), plan.out);
    if (out[0].size() == 0) return Status::ok();
    if (x.size() == 0) return node_error(node, "cannot resize an empty tensor");
    Status status;
    const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      status = resize_typed<T>(attrs, x, plan, out[0], threads);
    });
    PTQ_RETURN_IF_ERROR(status);
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_resize(const KernelContext& ctx) {
  PTQ_ASSIGN_OR_RETURN(ResizeAttrs attrs, parse_attrs(ctx));
  return make_resize_kernel(ctx, std::move(attrs));
}

// Upsample (deprecated at opset 10) is Resize-10: X and scales (an attribute before opset 9),
// asymmetric coordinates, nearest rounding down when enlarging.
Expected<std::unique_ptr<Kernel>> make_upsample(const KernelContext& ctx) {
  KernelContext ctx10{ctx.node, 10, ctx.threads, ctx.graph, ctx.reference, ctx.winograd};
  PTQ_ASSIGN_OR_RETURN(ResizeAttrs attrs, parse_attrs(ctx10));
  if (ctx.opset >= 9) return make_resize_kernel(ctx10, std::move(attrs));
  // Scales as an attribute: feed them as the input Resize-10 expects.
  const std::vector<float> scales = ctx.node.attr_floats("scales", {});
  const ir::Tensor scales_t =
      ir::make_tensor<float>({static_cast<int64_t>(scales.size())}, std::span<const float>(scales));
  PTQ_ASSIGN_OR_RETURN(auto inner, make_resize_kernel(ctx10, std::move(attrs)));
  // Shared only because KernelFn (std::function) needs a copyable callable.
  std::shared_ptr<Kernel> shared(std::move(inner));
  return make_kernel([shared, scales_t](Inputs in, Outputs out, Allocator& alloc) -> Status {
    const ir::Tensor* x = in.empty() ? nullptr : in[0];
    const ir::Tensor* with_scales[] = {x, &scales_t};
    return shared->run(with_scales, out, alloc);
  });
}

}  // namespace ptq::runtime::cpu
