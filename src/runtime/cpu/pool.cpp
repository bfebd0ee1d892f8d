// MaxPool (with Indices), AveragePool, GlobalAveragePool, GlobalMaxPool.
// Reference: N-D loops (double sums); fast: float32 2-D windows without index decoding.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

struct PoolParams {
  int64_t planes = 0;  // N * C
  std::vector<int64_t> in, out;
  Window w;
  bool count_include_pad = false;
  bool column_major = false;  // MaxPool storage_order = 1
};

}  // namespace

namespace reference {

// One window of one plane: calls tap(offset) for each tap inside the input; returns the
// number of taps inside the padded input (what count_include_pad divides by).
constexpr size_t kMaxRank = 8;
using Index = std::array<int64_t, kMaxRank>;

template <typename F>
int64_t for_each_tap(const PoolParams& p, const Index& o, F&& tap) {
  const size_t r = p.in.size();
  const int64_t taps = dims_product(p.w.kernel, 0, r);
  int64_t padded = 0;
  Index k{}, pos{};
  for (int64_t ki = 0; ki < taps; ++ki) {
    for (int64_t rem = ki, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      k[d] = rem % p.w.kernel[d];
      rem /= p.w.kernel[d];
    }
    bool inside = true, in_pad = true;
    for (size_t d = 0; d < r; ++d) {
      pos[d] = o[d] * p.w.strides[d] - p.w.pad_begin(d) + k[d] * p.w.dilations[d];
      inside = inside && pos[d] >= 0 && pos[d] < p.in[d];
      in_pad = in_pad && pos[d] >= -p.w.pad_begin(d) && pos[d] < p.in[d] + p.w.pad_end(d);
    }
    padded += in_pad ? 1 : 0;
    if (inside) tap(pos);
  }
  return padded;
}

template <typename T>
void pool(const PoolParams& p, bool is_max, const T* x, T* y, int64_t* indices) {
  const size_t r = p.in.size();
  const int64_t in_size = dims_product(p.in, 0, r), out_size = dims_product(p.out, 0, r);
  Index o{};
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    for (int64_t oi = 0; oi < out_size; ++oi) {
      for (int64_t rem = oi, d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
        o[d] = rem % p.out[d];
        rem /= p.out[d];
      }
      double sum = 0.0;
      int64_t inside = 0, best_at = -1;
      T best = std::numeric_limits<T>::lowest();
      if constexpr (std::numeric_limits<T>::has_infinity)
        best = -std::numeric_limits<T>::infinity();
      const int64_t padded = for_each_tap(p, o, [&](const Index& pos) {
        int64_t off = 0;
        for (size_t d = 0; d < r; ++d) off = off * p.in[d] + pos[d];
        const T v = x[plane * in_size + off];
        sum += static_cast<double>(v);
        ++inside;
        if (best_at < 0 || v > best) {
          best = v;
          int64_t column_major = 0;
          for (size_t d = r; d-- > 0;) column_major = column_major * p.in[d] + pos[d];
          best_at = p.column_major ? column_major : off;
        }
      });
      if (is_max) {
        y[plane * out_size + oi] = best;
        if (indices != nullptr) indices[plane * out_size + oi] = plane * in_size + best_at;
      } else {
        const int64_t count = p.count_include_pad ? padded : inside;
        y[plane * out_size + oi] =
            static_cast<T>(count > 0 ? sum / static_cast<double>(count) : 0.0);
      }
    }
  }
}

}  // namespace reference

namespace {

// out[ow] = the max over kw of r[ow * SW + kw * DW], NaN skipped (a NaN never compares greater),
// a window at a time in kw order like the direct loop. Window by window across the row, so the
// loads vectorise; kStride is SW when it is 1 or 2 (the loads then need no gather), else 0.
template <int64_t kStride>
void row_max(const float* r, int64_t OW, int64_t KW, int64_t DW, int64_t SW, float* out) {
  const int64_t s = kStride > 0 ? kStride : SW;
  std::fill(out, out + OW, -std::numeric_limits<float>::infinity());
  for (int64_t kw = 0; kw < KW; ++kw) {
    const float* rk = r + kw * DW;
    for (int64_t ow = 0; ow < OW; ++ow) out[ow] = rk[ow * s] > out[ow] ? rk[ow * s] : out[ow];
  }
}

// Float32 2-D pooling, one plane per task.
// Max pooling as, per output row, a column max over the window's rows into a row padded with
// -inf, then a max over the window's columns: no bounds checks in the inner loops, and the
// column pass vectorises. NaN is skipped as in the direct loop (a window of NaN only gives -inf).
void max_pool2d(const PoolParams& p, const float* x, float* y, int threads) {
  const int64_t H = p.in[0], W = p.in[1], OH = p.out[0], OW = p.out[1];
  const int64_t KH = p.w.kernel[0], KW = p.w.kernel[1], SH = p.w.strides[0], SW = p.w.strides[1];
  const int64_t DH = p.w.dilations[0], DW = p.w.dilations[1], PT = p.w.pad_begin(0),
                PL = p.w.pad_begin(1);
  const int64_t wide = (OW - 1) * SW + (KW - 1) * DW + 1;  // padded columns the windows read
  const int64_t n = std::clamp<int64_t>(std::min(W, wide - PL), 0, W);  // input columns read
  const int64_t first = std::min(PL, wide);  // padded column of input column 0
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  parallel_for(threads, p.planes, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(wide), kLow);
    float* mid = row.data() + first;
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * H * W;
      float* yp = y + plane * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        std::fill(mid, mid + n, kLow);
        for (int64_t kh = 0; kh < KH; ++kh) {
          const int64_t ih = oh * SH - PT + kh * DH;
          if (ih < 0 || ih >= H) continue;
          const float* xr = xp + ih * W;
          for (int64_t i = 0; i < n; ++i) mid[i] = xr[i] > mid[i] ? xr[i] : mid[i];
        }
        if (SW == 2) {
          row_max<2>(row.data(), OW, KW, DW, SW, yp + oh * OW);
        } else if (SW == 1) {
          row_max<1>(row.data(), OW, KW, DW, SW, yp + oh * OW);
        } else {
          row_max<0>(row.data(), OW, KW, DW, SW, yp + oh * OW);
        }
      }
    }
  });
}

void pool2d_fast(const PoolParams& p, bool is_max, const float* x, float* y, int threads) {
  if (is_max && p.in[1] > 0 && p.out[1] > 0) {
    max_pool2d(p, x, y, threads);
    return;
  }
  const int64_t H = p.in[0], W = p.in[1], OH = p.out[0], OW = p.out[1];
  const int64_t KH = p.w.kernel[0], KW = p.w.kernel[1], SH = p.w.strides[0], SW = p.w.strides[1];
  const int64_t DH = p.w.dilations[0], DW = p.w.dilations[1], PT = p.w.pad_begin(0),
                PL = p.w.pad_begin(1), PB = p.w.pad_end(0), PR = p.w.pad_end(1);
  parallel_for(threads, p.planes, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const float* xp = x + plane * H * W;
      float* yp = y + plane * OH * OW;
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          float best = -std::numeric_limits<float>::infinity(), sum = 0.0f;
          int64_t inside = 0, padded = 0;
          for (int64_t kh = 0; kh < KH; ++kh) {
            const int64_t ih = oh * SH - PT + kh * DH;
            const bool row_in = ih >= 0 && ih < H, row_pad = ih >= -PT && ih < H + PB;
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t iw = ow * SW - PL + kw * DW;
              padded += row_pad && iw >= -PL && iw < W + PR ? 1 : 0;
              if (!row_in || iw < 0 || iw >= W) continue;
              const float v = xp[ih * W + iw];
              best = v > best ? v : best;
              sum += v;
              ++inside;
            }
          }
          const int64_t count = p.count_include_pad ? padded : inside;
          yp[oh * OW + ow] = is_max ? best : (count > 0 ? sum / static_cast<float>(count) : 0.0f);
        }
      }
    }
  });
}

class PoolKernel final : public Kernel {
 public:
  PoolKernel(const KernelContext& ctx, bool is_max, Window w)
      : node_(ctx.node), is_max_(is_max), window_(std::move(w)), threads_(ctx.threads),
        reference_(ctx.reference) {
    count_include_pad_ = ctx.node.attr_int("count_include_pad", 0) != 0;
    column_major_ = ctx.node.attr_int("storage_order", 0) != 0;
  }

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 1));
    const ir::Tensor& x = *in[0];
    if (x.rank() != static_cast<int64_t>(window_.rank()) + 2 ||
        window_.rank() > reference::kMaxRank) {
      return node_error(node_, "X {} does not have rank {} (kernel_shape has {} dims)",
                        ir::shape_str(x.shape()), window_.rank() + 2, window_.rank());
    }
    PoolParams p;
    p.w = window_;
    p.planes = x.dim(0) * x.dim(1);
    p.in.assign(x.shape().begin() + 2, x.shape().end());
    PTQ_ASSIGN_OR_RETURN(p.out, forward_output_dims(node_, p.w, p.in));
    p.count_include_pad = count_include_pad_;
    p.column_major = column_major_;
    ir::Shape shape{x.dim(0), x.dim(1)};
    shape.insert(shape.end(), p.out.begin(), p.out.end());
    out[0] = alloc.allocate(x.dtype(), shape);
    int64_t* indices = nullptr;
    if (out.size() > 1 && !node_.outputs[1].empty()) {
      out[1] = alloc.allocate(ir::DType::kInt64, shape);
      indices = out[1].data<int64_t>();
    }
    if (x.dtype() == ir::DType::kFloat32 && !reference_ && indices == nullptr && p.in.size() == 2) {
      pool2d_fast(p, is_max_, x.data<float>(), out[0].data<float>(), threads_);
      return Status::ok();
    }
    auto body = [&](auto tag) {
      using T = typename decltype(tag)::type;
      reference::pool<T>(p, is_max_, x.data<T>(), out[0].data<T>(), indices);
    };
    const bool done = is_max_ ? dispatch<float, double, int8_t, uint8_t>(x.dtype(), body)
                              : dispatch_float(x.dtype(), body);
    return done ? Status::ok() : unsupported_dtype(node_, x.dtype());
  }

 private:
  const ir::Node& node_;
  bool is_max_;
  Window window_;
  int threads_;
  bool reference_;
  bool count_include_pad_ = false;
  bool column_major_ = false;
};

Expected<std::unique_ptr<Kernel>> make_pool(const KernelContext& ctx, bool is_max) {
  const std::vector<int64_t> kernel = ctx.node.attr_ints("kernel_shape", {});
  if (kernel.empty()) return node_error(ctx.node, "kernel_shape is required");
  PTQ_ASSIGN_OR_RETURN(Window w, read_window(ctx.node, kernel));
  if (ctx.node.attr_int("storage_order", 0) != 0 && kernel.size() != 2) {
    return node_error(ctx.node, "storage_order=1 is supported for 2-D pooling only");
  }
  return std::unique_ptr<Kernel>(std::make_unique<PoolKernel>(ctx, is_max, std::move(w)));
}

// Global pooling: one value per (n, c) plane, averaged in double (sum_in_double, kernel_util.h:
// MobileNetV2's pool over 7x7 at batch 32 took 1.0 ms with one running sum, against ONNX
// Runtime's 0.28).
class GlobalPoolKernel final : public Kernel {
 public:
  GlobalPoolKernel(const KernelContext& ctx, bool is_max)
      : node_(ctx.node), is_max_(is_max), threads_(ctx.threads) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 1));
    const ir::Tensor& x = *in[0];
    if (x.rank() < 2)
      return node_error(node_, "X {} must have rank >= 2", ir::shape_str(x.shape()));
    ir::Shape shape = x.shape();
    for (size_t d = 2; d < shape.size(); ++d) shape[d] = 1;
    const int64_t planes = x.dim(0) * x.dim(1), s = dims_product(x.shape(), 2, x.shape().size());
    out[0] = alloc.allocate(x.dtype(), shape);
    const bool done = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data<T>();
      T* yp = out[0].data<T>();
      parallel_for(threads_, planes, [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          const T* row = xp + p * s;
          if (is_max_) {
            T best = -std::numeric_limits<T>::infinity();
            for (int64_t j = 0; j < s; ++j) best = row[j] > best ? row[j] : best;
            yp[p] = best;
          } else {
            yp[p] = static_cast<T>(s > 0 ? sum_in_double(row, s) / static_cast<double>(s) : 0.0);
          }
        }
      });
    });
    return done ? Status::ok() : unsupported_dtype(node_, x.dtype());
  }

 private:
  const ir::Node& node_;
  bool is_max_;
  int threads_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_max_pool(const KernelContext& ctx) {
  return make_pool(ctx, true);
}
Expected<std::unique_ptr<Kernel>> make_average_pool(const KernelContext& ctx) {
  return make_pool(ctx, false);
}
Expected<std::unique_ptr<Kernel>> make_global_average_pool(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<GlobalPoolKernel>(ctx, false));
}
Expected<std::unique_ptr<Kernel>> make_global_max_pool(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<GlobalPoolKernel>(ctx, true));
}

}  // namespace ptq::runtime::cpu
