// DFT and STFT (opset 17): the discrete Fourier transform of each line along an axis, real or
// complex input (last dim 1 or 2), complex output (last dim 2), summed in double from a table
// of the n-th roots of unity (index j k mod n, so no phase grows with j k). STFT transforms
// windowed frames of a [batch, length, 1|2] signal. O(n^2) per line: the spectral ops ONNX
// models carry work on frames of a few hundred samples.
#include <cmath>
#include <numbers>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// One transform: n points (the input zero-padded or cut to n), `bins` of them written.
struct Transform {
  int64_t n = 0, bins = 0;
  bool inverse = false;
  std::vector<double> cos, sin;  // e^(-+2 pi i t / n) for t < n

  Transform(int64_t points, int64_t out_bins, bool inv) : n(points), bins(out_bins), inverse(inv) {
    for (int64_t t = 0; t < n; ++t) {
      const double phase = 2.0 * std::numbers::pi * static_cast<double>(t) / static_cast<double>(n);
      cos.push_back(std::cos(phase));
      sin.push_back(inverse ? std::sin(phase) : -std::sin(phase));
    }
  }

  // y[k] = scale * sum_j x[j] w^(j k) over the `len` input values read at x + j * stride
  // (x[j] complex when `complex`, else real), weighted by window[j] when given; y is bins
  // complex pairs at y + k * y_stride.
  template <typename T>
  void run(const T* x, int64_t len, int64_t stride, bool complex, const T* window, T* y,
           int64_t y_stride) const {
    const int64_t m = std::min(len, n);
    const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
    for (int64_t k = 0; k < bins; ++k) {
      double re = 0.0, im = 0.0;
      for (int64_t j = 0; j < m; ++j) {
        const double w = window != nullptr ? static_cast<double>(window[j]) : 1.0;
        const double xr = static_cast<double>(x[j * stride]) * w;
        const double xi = complex ? static_cast<double>(x[j * stride + 1]) * w : 0.0;
        const auto t = static_cast<size_t>((j * k) % n);
        re += xr * cos[t] - xi * sin[t];
        im += xr * sin[t] + xi * cos[t];
      }
      y[k * y_stride] = static_cast<T>(re * scale);
      y[k * y_stride + 1] = static_cast<T>(im * scale);
    }
  }
};

Expected<int64_t> scalar_int(const ir::Node& node, const ir::Tensor* t, const char* what) {
  const std::vector<int64_t> v = to_int64s(*t);
  if (v.size() != 1) return node_error(node, "{} must hold one integer", what);
  return v[0];
}

Status complex_axis(const ir::Node& node, const ir::Tensor& x, int64_t min_rank) {
  if (x.rank() < min_rank || (x.shape().back() != 1 && x.shape().back() != 2)) {
    return node_error(node, "input {} must end in a dim of 1 (real) or 2 (complex)",
                      ir::shape_str(x.shape()));
  }
  return Status::ok();
}

struct DftAttrs {
  int64_t axis;
  bool inverse, onesided;
};

Status dft(const ir::Node& node, const DftAttrs& a, Inputs in, Outputs out, Allocator& alloc,
           int threads) {
  PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const ir::Tensor& x = *in[0];
  PTQ_RETURN_IF_ERROR(complex_axis(node, x, 2));
  // Negative axes count from the back: -2 is the last signal axis, before the complex one.
  const int64_t axis = a.axis < 0 ? a.axis + x.rank() : a.axis;
  if (axis < 0 || axis > x.rank() - 2) {
    return node_error(node, "axis {} is not a signal axis of {}", a.axis, ir::shape_str(x.shape()));
  }
  const int64_t len = x.dim(static_cast<size_t>(axis));
  int64_t n = len;
  if (const ir::Tensor* l = input_or_null(in, 1)) {
    PTQ_ASSIGN_OR_RETURN(n, scalar_int(node, l, "dft_length"));
    if (n < 1) return node_error(node, "dft_length {} must be positive", n);
  }
  const Transform tr(n, a.onesided ? n / 2 + 1 : n, a.inverse);
  ir::Shape shape = x.shape();
  shape[static_cast<size_t>(axis)] = tr.bins;
  shape.back() = 2;
  out[0] = alloc.allocate(x.dtype(), shape);
  const int64_t inner = dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
  const int64_t y_inner = dims_product(shape, static_cast<size_t>(axis) + 1, shape.size());
  const int64_t outer = dims_product(x.shape(), 0, static_cast<size_t>(axis));
  const int64_t lines_per = inner / x.shape().back();  // lines per outer index
  const bool complex = x.shape().back() == 2;
  const bool done = dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    parallel_for(threads, outer * lines_per, [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        const int64_t o = line / lines_per, i = line % lines_per;
        tr.run(x.data<T>() + o * len * inner + i * x.shape().back(), len, inner, complex,
               static_cast<const T*>(nullptr), out[0].data<T>() + o * tr.bins * y_inner + i * 2,
               y_inner);
      }
    });
  });
  return done ? Status::ok() : unsupported_dtype(node, x.dtype());
}

Status stft(const ir::Node& node, bool onesided, Inputs in, Outputs out, Allocator& alloc,
            int threads) {
  PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ir::Tensor& x = *in[0];
  PTQ_RETURN_IF_ERROR(complex_axis(node, x, 3));
  if (x.rank() != 3) return node_error(node, "signal {} must be [batch, length, 1|2]",
                                       ir::shape_str(x.shape()));
  PTQ_ASSIGN_OR_RETURN(const int64_t step, scalar_int(node, in[1], "frame_step"));
  const ir::Tensor* window = input_or_null(in, 2);
  const ir::Tensor* length = input_or_null(in, 3);
  int64_t n = window != nullptr ? window->size() : 0;
  if (length != nullptr) {
    PTQ_ASSIGN_OR_RETURN(n, scalar_int(node, length, "frame_length"));
  }
  if (window != nullptr && (window->rank() != 1 || window->size() != n)) {
    return node_error(node, "window {} does not match frame_length {}",
                      ir::shape_str(window->shape()), n);
  }
  if (window != nullptr && window->dtype() != x.dtype()) {
    return node_error(node, "window and signal must share one element type");
  }
  if (n < 1 || step < 1 || n > x.dim(1)) {
    return node_error(node, "frame_length {} and frame_step {} do not frame a signal {}", n,
                      step, ir::shape_str(x.shape()));
  }
  const Transform tr(n, onesided ? n / 2 + 1 : n, false);
  const int64_t frames = (x.dim(1) - n) / step + 1, c = x.dim(2);
  out[0] = alloc.allocate(x.dtype(), ir::Shape{x.dim(0), frames, tr.bins, 2});
  const bool done = dispatch_float(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* w = window != nullptr ? window->data<T>() : nullptr;
    parallel_for(threads, x.dim(0) * frames, [&](int64_t begin, int64_t end) {
      for (int64_t f = begin; f < end; ++f) {
        const int64_t b = f / frames, start = (f % frames) * step;
        tr.run(x.data<T>() + (b * x.dim(1) + start) * c, n, c, c == 2, w,
               out[0].data<T>() + f * tr.bins * 2, 2);
      }
    });
  });
  return done ? Status::ok() : unsupported_dtype(node, x.dtype());
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_dft(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const DftAttrs a{node.attr_int("axis", 1), node.attr_int("inverse", 0) != 0,
                   node.attr_int("onesided", 0) != 0};
  if (a.inverse && a.onesided) return node_error(node, "an inverse DFT cannot be onesided");
  const int threads = ctx.threads;
  return make_kernel([&node, a, threads](Inputs in, Outputs out, Allocator& alloc) {
    return dft(node, a, in, out, alloc, threads);
  });
}

Expected<std::unique_ptr<Kernel>> make_stft(const KernelContext& ctx) {
  const ir::Node& node = ctx.node;
  const bool onesided = node.attr_int("onesided", 1) != 0;
  const int threads = ctx.threads;
  return make_kernel([&node, onesided, threads](Inputs in, Outputs out, Allocator& alloc) {
    return stft(node, onesided, in, out, alloc, threads);
  });
}

}  // namespace ptq::runtime::cpu
