// Softmax and LogSoftmax. Opset < 13 flattens to 2-D at `axis` (default 1) and normalises each
// row; opset >= 13 normalises along the single `axis` (default -1).

// GCC 12 reports a false "(may be) used uninitialized" inside its own AVX-512 max and reduce
// intrinsics (their _mm512_undefined_ps pass-through operand).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>
#include <cmath>
#include <vector>

#include "exp.h"
#include "kernel_util.h"
#include "lanes.h"
#include "registry.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

// X viewed as [outer, d, inner]; rows run along d with stride inner.
struct Rows {
  int64_t outer = 1, d = 1, inner = 1;
};

}  // namespace

namespace reference {

template <typename T>
void softmax(const Rows& r, bool log, const T* x, T* y) {
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.d * r.inner + i;
      double mx = -INFINITY;
      for (int64_t j = 0; j < r.d; ++j)
        mx = std::max(mx, static_cast<double>(x[base + j * r.inner]));
      double sum = 0.0;
      for (int64_t j = 0; j < r.d; ++j)
        sum += std::exp(static_cast<double>(x[base + j * r.inner]) - mx);
      for (int64_t j = 0; j < r.d; ++j) {
        const double v = static_cast<double>(x[base + j * r.inner]) - mx;
        y[base + j * r.inner] = static_cast<T>(log ? v - std::log(sum) : std::exp(v) / sum);
      }
    }
  }
}

}  // namespace reference

namespace {

// The largest of x's d > 0 values and the sum of y's d values, sixteen lanes at a time (value j
// into lane j % 16), the lanes then combined in a fixed order: the same result for any thread
// count. With AVX-512 the lanes are one register and combine as a tree (a row of 16, an
// attention row, was bound by a sequential combine's latency).
#if PTQ_AVX512
float row_max(int64_t d, const float* x) {
  __m512 m = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= d; j += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(x + j));
  if (j < d) {
    const __mmask16 tail = lane_mask(d - j);
    m = _mm512_mask_max_ps(m, tail, m, _mm512_maskz_loadu_ps(tail, x + j));
  }
  return _mm512_reduce_max_ps(m);
}

float row_sum(int64_t d, const float* y) {
  __m512 s = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= d; j += 16) s = _mm512_add_ps(s, _mm512_loadu_ps(y + j));
  if (j < d) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(lane_mask(d - j), y + j));
  return _mm512_reduce_add_ps(s);
}
#else
constexpr int kLanes = 16;

float row_max(int64_t d, const float* x) {
  float m[kLanes];
  std::fill(m, m + kLanes, -INFINITY);
  for (int64_t j = 0; j < d; ++j) m[j % kLanes] = std::max(m[j % kLanes], x[j]);
  float mx = m[0];
  for (int k = 1; k < kLanes; ++k) mx = std::max(mx, m[k]);
  return mx;
}

float row_sum(int64_t d, const float* y) {
  float s[kLanes] = {};
  for (int64_t j = 0; j < d; ++j) s[j % kLanes] += y[j];
  float sum = 0.0f;
  for (float v : s) sum += v;
  return sum;
}
#endif

// One row of d contiguous values: the largest subtracted, exp_float() (exp.h), normalised.
void softmax_row(int64_t d, bool log, const float* x, float* y) {
  const float mx = row_max(d, x);
  for (int64_t j = 0; j < d; ++j) y[j] = exp_float(x[j] - mx);
  const float sum = row_sum(d, y);
  if (log) {
    const float shift = mx + std::log(sum);
    for (int64_t j = 0; j < d; ++j) y[j] = x[j] - shift;
  } else {
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < d; ++j) y[j] *= inv;
  }
}

// Rows [begin, end) of r: contiguous rows in place, strided ones through a contiguous copy.
void softmax_rows(const Rows& r, bool log, const float* x, float* y, int64_t begin, int64_t end) {
  std::vector<float> in, out;
  if (r.inner != 1) {
    in.resize(static_cast<size_t>(r.d));
    out.resize(static_cast<size_t>(r.d));
  }
  for (int64_t t = begin; t < end; ++t) {
    const int64_t base = (t / r.inner) * r.d * r.inner + t % r.inner;
    if (r.inner == 1) {
      softmax_row(r.d, log, x + base, y + base);
      continue;
    }
    for (int64_t j = 0; j < r.d; ++j) in[j] = x[base + j * r.inner];
    softmax_row(r.d, log, in.data(), out.data());
    for (int64_t j = 0; j < r.d; ++j) y[base + j * r.inner] = out[j];
  }
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(const KernelContext& ctx, bool log)
      : node_(ctx.node),
        log_(log),
        legacy_(ctx.opset < 13),
        axis_(ctx.node.attr_int("axis", ctx.opset < 13 ? 1 : -1)),
        threads_(ctx.threads),
        reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 1));
    const ir::Tensor& x = *in[0];
    const int64_t rank = std::max<int64_t>(x.rank(), 1);
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node_, axis_, rank));
    const size_t a = static_cast<size_t>(axis), n = x.shape().size();
    Rows r;
    r.outer = dims_product(x.shape(), 0, a);
    r.d = legacy_ ? dims_product(x.shape(), a, n) : (n == 0 ? 1 : x.dim(axis));
    r.inner = legacy_ ? 1 : dims_product(x.shape(), a + 1, n);
    out[0] = alloc.allocate(x.dtype(), x.shape());
    if (x.dtype() == ir::DType::kFloat32 && !reference_) {
      const float* xp = x.data<float>();
      float* yp = out[0].data<float>();
      parallel_for(threads_, r.outer * r.inner,
                   [&](int64_t begin, int64_t end) { softmax_rows(r, log_, xp, yp, begin, end); });
      return Status::ok();
    }
    const bool done = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      reference::softmax<T>(r, log_, x.data<T>(), out[0].data<T>());
    });
    return done ? Status::ok() : unsupported_dtype(node_, x.dtype());
  }

 private:
  const ir::Node& node_;
  bool log_, legacy_;
  int64_t axis_;
  int threads_;
  bool reference_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_softmax(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<SoftmaxKernel>(ctx, false));
}
Expected<std::unique_ptr<Kernel>> make_log_softmax(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<SoftmaxKernel>(ctx, true));
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
