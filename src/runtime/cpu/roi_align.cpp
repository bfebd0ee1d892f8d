// RoiAlign (opsets 10, 16): each region of interest [x1, y1, x2, y2] (times spatial_scale) is
// cut into output_height x output_width bins; each bin samples a grid of points bilinearly and
// takes their mean (avg) or their largest weighted corner value (max, as ONNX Runtime does).
// Coordinates follow ONNX Runtime: half_pixel shifts by half a pixel; output_half_pixel (all of
// opset 10) does not and stretches rois to at least one pixel. sampling_ratio 0 samples
// ceil(roi size / bins) points per bin along each axis. Values are accumulated in double.
#include <algorithm>
#include <cmath>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

struct RoiAttrs {
  bool max_mode = false;
  int64_t out_h = 1, out_w = 1;
  int64_t sampling_ratio = 0;
  double spatial_scale = 1.0;
  bool half_pixel = false;
};

// One bilinear sample point: four flat plane offsets and their weights.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

// ONNX Runtime's rule: points more than a pixel outside the plane weigh nothing; others clamp
// to it.
Sample sample_at(double y, double x, int64_t height, int64_t width) {
  Sample s;
  const auto h = static_cast<double>(height), w = static_cast<double>(width);
  if (y < -1.0 || y > h || x < -1.0 || x > w) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_low * width + x_low;
  s.pos[1] = y_low * width + x_high;
  s.pos[2] = y_high * width + x_low;
  s.pos[3] = y_high * width + x_high;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

// The sample points of every bin of one roi, bin by bin.
struct RoiGrid {
  int64_t per_bin = 0;
  std::vector<Sample> samples;
};

template <typename T>
RoiGrid roi_grid(const RoiAttrs& a, const T* roi, int64_t height, int64_t width) {
  const double offset = a.half_pixel ? 0.5 : 0.0;
  const double x0 = static_cast<double>(roi[0]) * a.spatial_scale - offset;
  const double y0 = static_cast<double>(roi[1]) * a.spatial_scale - offset;
  double roi_w = static_cast<double>(roi[2]) * a.spatial_scale - offset - x0;
  double roi_h = static_cast<double>(roi[3]) * a.spatial_scale - offset - y0;
  if (!a.half_pixel) {
    roi_w = std::max(roi_w, 1.0);
    roi_h = std::max(roi_h, 1.0);
  }
  if (!std::isfinite(roi_w) || !std::isfinite(roi_h) || !std::isfinite(x0) ||
      !std::isfinite(y0)) {
    return {};  // no samples: the bins average to 0
  }
  const double bin_h = roi_h / static_cast<double>(a.out_h);
  const double bin_w = roi_w / static_cast<double>(a.out_w);
  const int64_t grid_h = a.sampling_ratio > 0 ? a.sampling_ratio
                                              : static_cast<int64_t>(std::ceil(bin_h));
  const int64_t grid_w = a.sampling_ratio > 0 ? a.sampling_ratio
                                              : static_cast<int64_t>(std::ceil(bin_w));
  RoiGrid g;
  g.per_bin = std::max<int64_t>(grid_h, 0) * std::max<int64_t>(grid_w, 0);
  for (int64_t ph = 0; ph < a.out_h; ++ph) {
    for (int64_t pw = 0; pw < a.out_w; ++pw) {
      for (int64_t iy = 0; iy < grid_h; ++iy) {
        const double y = y0 + static_cast<double>(ph) * bin_h +
                         (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
        for (int64_t ix = 0; ix < grid_w; ++ix) {
          const double x = x0 + static_cast<double>(pw) * bin_w +
                           (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
          g.samples.push_back(sample_at(y, x, height, width));
        }
      }
    }
  }
  return g;
}

// One output plane [out_h, out_w] of one roi and channel.
template <typename T>
void pool_plane(const RoiAttrs& a, const RoiGrid& g, const T* plane, T* out) {
  const int64_t bins = a.out_h * a.out_w;
  for (int64_t bin = 0; bin < bins; ++bin) {
    const Sample* s = g.samples.data() + bin * g.per_bin;
    double acc = 0;
    for (int64_t k = 0; k < g.per_bin; ++k) {
      double v = 0;
      if (a.max_mode) {
        v = s[k].w[0] * static_cast<double>(plane[s[k].pos[0]]);
        for (int c = 1; c < 4; ++c) {
          v = std::max(v, s[k].w[c] * static_cast<double>(plane[s[k].pos[c]]));
        }
        acc = k == 0 ? v : std::max(acc, v);
      } else {
        for (int c = 0; c < 4; ++c) v += s[k].w[c] * static_cast<double>(plane[s[k].pos[c]]);
        acc += v;
      }
    }
    if (!a.max_mode) acc /= static_cast<double>(std::max<int64_t>(g.per_bin, 1));
    out[bin] = static_cast<T>(acc);
  }
}

template <typename T>
void roi_align_typed(const RoiAttrs& a, const ir::Tensor& x, const ir::Tensor& rois,
                     const std::vector<int64_t>& batch, ir::Tensor& y, int threads) {
  const int64_t channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t num_rois = rois.dim(0);
  std::vector<RoiGrid> grids(static_cast<size_t>(num_rois));
  parallel_tasks(threads, num_rois, [&](int64_t r) {
    grids[static_cast<size_t>(r)] = roi_grid(a, rois.data<T>() + r * 4, height, width);
  });
  const int64_t plane_in = height * width, plane_out = a.out_h * a.out_w;
  parallel_for(threads, num_rois * channels, [&](int64_t begin, int64_t end) {
    for (int64_t rc = begin; rc < end; ++rc) {
      const int64_t r = rc / channels, c = rc % channels;
      const T* plane = x.data<T>() + (batch[static_cast<size_t>(r)] * channels + c) * plane_in;
      pool_plane(a, grids[static_cast<size_t>(r)], plane, y.data<T>() + rc * plane_out);
    }
  });
}

Expected<std::vector<int64_t>> read_batch_indices(const ir::Node& node, const ir::Tensor& x,
                                                  const ir::Tensor& rois,
                                                  const ir::Tensor& indices) {
  if (x.rank() != 4 || x.dim(2) < 1 || x.dim(3) < 1 || rois.rank() != 2 || rois.dim(1) != 4 ||
      indices.rank() != 1 || indices.dim(0) != rois.dim(0)) {
    return node_error(node, "X {}, rois {} and batch_indices {} do not match [N, C, H, W], "
                      "[rois, 4] and [rois]",
                      ir::shape_str(x.shape()), ir::shape_str(rois.shape()),
                      ir::shape_str(indices.shape()));
  }
  std::vector<int64_t> batch(static_cast<size_t>(indices.size()));
  for (int64_t i = 0; i < indices.size(); ++i) {
    batch[static_cast<size_t>(i)] = indices.as_int64(i);
    if (batch[static_cast<size_t>(i)] < 0 || batch[static_cast<size_t>(i)] >= x.dim(0)) {
      return node_error(node, "batch index {} of roi {} is outside [0, {})",
                        batch[static_cast<size_t>(i)], i, x.dim(0));
    }
  }
  return batch;
}

Expected<RoiAttrs> read_attrs(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  RoiAttrs a;
  const std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") return node_error(node, "mode '{}' is unknown", mode);
  a.max_mode = mode == "max";
  a.out_h = node.attr_int("output_height", 1);
  a.out_w = node.attr_int("output_width", 1);
  a.sampling_ratio = node.attr_int("sampling_ratio", 0);
  a.spatial_scale = node.attr_float("spatial_scale", 1.0f);
  if (a.out_h < 1 || a.out_w < 1 || a.sampling_ratio < 0) {
    return node_error(node, "output {}x{} or sampling_ratio {} is not positive", a.out_h,
                      a.out_w, a.sampling_ratio);
  }
  const std::string coords = node.attr_string(
      "coordinate_transformation_mode", ctx.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (coords != "half_pixel" && coords != "output_half_pixel") {
    return node_error(node, "coordinate_transformation_mode '{}' is unknown", coords);
  }
  a.half_pixel = coords == "half_pixel";
  return a;
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_roi_align(const KernelContext& ctx) {
  PTQ_ASSIGN_OR_RETURN(const RoiAttrs attrs, read_attrs(ctx));
  auto run = [node = ctx.node, threads = ctx.threads, attrs](Inputs in, Outputs out,
                                                             Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& rois = *in[1];
    PTQ_ASSIGN_OR_RETURN(const std::vector<int64_t> batch,
                         read_batch_indices(node, x, rois, *in[2]));
    if (rois.dtype() != x.dtype()) {
      return node_error(node, "X is {} but rois {}", ir::dtype_name(x.dtype()),
                        ir::dtype_name(rois.dtype()));
    }
    out[0] = alloc.allocate(x.dtype(), {rois.dim(0), x.dim(1), attrs.out_h, attrs.out_w});
    if (out[0].size() == 0) return Status::ok();
    const bool ok = dispatch_float(x.dtype(), [&](auto tag) {
      roi_align_typed<typename decltype(tag)::type>(attrs, x, rois, batch, out[0], threads);
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

}  // namespace ptq::runtime::cpu
