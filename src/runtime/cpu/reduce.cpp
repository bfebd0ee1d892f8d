// Reductions over axes: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp (keepdims, noop_with_empty_axes;
// axes as attribute before opset 18 — 13 for ReduceSum — and as input after), and ArgMax /
// ArgMin, and Hardmax. Each output element is reduced by one thread in a fixed order, so results do
// not depend on the thread count. Float sums accumulate in double.
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

namespace {

// Output element o reads base(o) + sum_k j_k * red_strides[k] for j over red_shape.
struct ReducePlan {
  ir::Shape out;          // final output shape (keepdims applied)
  ir::Shape kept_shape;   // the output dims (non-reduced), row-major
  std::vector<int64_t> kept_strides;  // input strides of the kept dims
  ir::Shape red_shape;
  std::vector<int64_t> red_strides;
  int64_t red_count = 1;
};

ReducePlan make_plan(const ir::Shape& in, const std::vector<bool>& reduce, bool keepdims) {
  ReducePlan p;
  const std::vector<int64_t> st = strides_of(in);
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduce[d]) {
      p.red_shape.push_back(in[d]);
      p.red_strides.push_back(st[d]);
      p.red_count *= in[d];
      if (keepdims) p.out.push_back(1);
    } else {
      p.kept_shape.push_back(in[d]);
      p.kept_strides.push_back(st[d]);
      p.out.push_back(in[d]);
    }
  }
  return p;
}

int64_t base_offset(const ReducePlan& p, int64_t o) {
  int64_t off = 0;
  for (size_t d = p.kept_shape.size(); d-- > 0;) {
    off += (o % p.kept_shape[d]) * p.kept_strides[d];
    o /= p.kept_shape[d];
  }
  return off;
}

// Calls fn(offset) for every input element reduced into the output element at `base`.
template <typename F>
void for_each_reduced(const ReducePlan& p, int64_t base, F&& fn) {
  if (p.red_count == 0) return;
  const size_t k = p.red_shape.size();
  if (k == 0) {
    fn(base);
    return;
  }
  if (k == 1) {  // one reduced dim: no index vector per output element
    for (int64_t j = 0; j < p.red_shape[0]; ++j) fn(base + j * p.red_strides[0]);
    return;
  }
  std::vector<int64_t> idx(k, 0);
  const int64_t inner = p.red_shape[k - 1];
  const int64_t inner_stride = p.red_strides[k - 1];
  int64_t off = base;
  while (true) {
    for (int64_t j = 0; j < inner; ++j) fn(off + j * inner_stride);
    size_t d = k - 1;
    while (d-- > 0) {
      ++idx[d];
      off += p.red_strides[d];
      if (idx[d] < p.red_shape[d]) break;
      off -= idx[d] * p.red_strides[d];
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

enum class Kind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

template <typename T>
using AccOf = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

// X seen as [outer, red, inner] when the reduced dims are consecutive and some kept dim
// follows them (ReduceMean over a sequence: [batch, seq, features] on axis 1).
struct MiddleBlock {
  int64_t outer = 1, red = 1, inner = 1;
};

std::optional<MiddleBlock> middle_block(const ir::Shape& in, const std::vector<bool>& reduce) {
  const auto first = std::find(reduce.begin(), reduce.end(), true);
  if (first == reduce.end()) return std::nullopt;
  const auto after = std::find(first, reduce.end(), false);
  if (after == reduce.end() || std::find(after, reduce.end(), true) != reduce.end()) {
    return std::nullopt;
  }
  const size_t a = static_cast<size_t>(first - reduce.begin());
  const size_t b = static_cast<size_t>(after - reduce.begin());
  MiddleBlock m{dims_product(in, 0, a), dims_product(in, a, b), dims_product(in, b, in.size())};
  return m;
}

// Output row o (m.inner values) of a middle-block reduction: each output's inputs added in
// ascending order, as the general loop adds them, in double (`acc`: m.inner of them).
template <typename T>
void reduce_middle_row(Kind kind, const T* src, const MiddleBlock& m, int64_t o,
                       std::vector<double>& acc, T* dst) {
  std::fill(acc.begin(), acc.end(), 0.0);
  const bool square = kind == Kind::kSumSquare || kind == Kind::kL2;
  for (int64_t r = 0; r < m.red; ++r) {
    const T* row = src + (o * m.red + r) * m.inner;
    if (square) {
      for (int64_t i = 0; i < m.inner; ++i) acc[i] += static_cast<double>(row[i]) * row[i];
    } else {
      for (int64_t i = 0; i < m.inner; ++i) acc[i] += static_cast<double>(row[i]);
    }
  }
  T* out = dst + o * m.inner;
  for (int64_t i = 0; i < m.inner; ++i) {
    double r = acc[i];
    if (kind == Kind::kMean) r = r / static_cast<double>(m.red);
    if (kind == Kind::kL2) r = std::sqrt(r);
    out[i] = static_cast<T>(r);
  }
}

// A middle-block reduction (kSum, kMean, kSumSquare, kL2 of float types) a row of outputs at a
// time, so the adds vectorise across outputs: the same bits as the general loop.
template <typename T>
void reduce_middle(Kind kind, const T* src, const MiddleBlock& m, T* dst, int threads) {
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(m.red * m.inner, 1));
  auto rows = [&](int64_t begin, int64_t end) {
    std::vector<double> acc(static_cast<size_t>(m.inner));
    for (int64_t o = begin; o < end; ++o) reduce_middle_row(kind, src, m, o, acc, dst);
  };
  parallel_for(threads, m.outer, rows, grain);
}

bool has_middle_path(Kind kind) {
  return kind == Kind::kSum || kind == Kind::kMean || kind == Kind::kSumSquare || kind == Kind::kL2;
}

template <typename T>
void reduce_typed(Kind kind, const ir::Tensor& x, const ReducePlan& p, ir::Tensor& y,
                  int threads) {
  using Acc = AccOf<T>;
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  const int64_t n = p.red_count;
  parallel_for(threads, y.size(), [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      const int64_t base = base_offset(p, o);
      if (kind == Kind::kMax || kind == Kind::kMin) {
        const bool is_max = kind == Kind::kMax;
        T best = is_max ? (std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest())
                        : (std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::max());
        bool nan = false;
        for_each_reduced(p, base, [&](int64_t i) {
          const T v = src[i];
          if constexpr (std::is_floating_point_v<T>) nan = nan || std::isnan(v);
          best = is_max ? (v > best ? v : best) : (v < best ? v : best);
        });
        dst[o] = nan ? std::numeric_limits<T>::quiet_NaN() : best;
        continue;
      }
      Acc acc = kind == Kind::kProd ? Acc(1) : Acc(0);
      for_each_reduced(p, base, [&](int64_t i) {
        const Acc v = static_cast<Acc>(src[i]);
        switch (kind) {
          case Kind::kProd: acc *= v; break;
          case Kind::kL1:
            if constexpr (std::is_signed_v<Acc>) acc += v < 0 ? -v : v;
            else acc += v;
            break;
          case Kind::kL2:
          case Kind::kSumSquare: acc += v * v; break;
          case Kind::kLogSumExp:
            if constexpr (std::is_floating_point_v<Acc>) acc += std::exp(v);
            break;
          default: acc += v; break;
        }
      });
      double r = static_cast<double>(acc);
      switch (kind) {
        case Kind::kMean: r = r / static_cast<double>(n); break;
        case Kind::kL2: r = std::sqrt(r); break;
        case Kind::kLogSum:
        case Kind::kLogSumExp: r = std::log(r); break;
        default:
          if constexpr (!std::is_floating_point_v<T>) {
            dst[o] = static_cast<T>(acc);  // exact integer result
            continue;
          }
      }
      dst[o] = static_cast<T>(r);
    }
  }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)));
}

// Which input dims to reduce: from the attribute, or from input 1 in the input-form opsets.
Expected<std::vector<bool>> reduced_dims(const ir::Node& node, Inputs in, int64_t rank,
                                         bool axes_from_input, bool noop_with_empty,
                                         bool* noop) {
  std::vector<int64_t> axes;
  if (axes_from_input) {
    if (const ir::Tensor* t = input_or_null(in, 1)) axes = to_int64s(*t);
  } else {
    axes = node.attr_ints("axes", {});
  }
  *noop = axes.empty() && noop_with_empty;
  std::vector<bool> reduce(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    PTQ_ASSIGN_OR_RETURN(const int64_t d, normalize_axis(node, a, rank));
    reduce[static_cast<size_t>(d)] = true;
  }
  return reduce;
}

Expected<std::unique_ptr<Kernel>> make_reduce(const KernelContext& ctx, Kind kind,
                                              int64_t input_axes_opset) {
  const bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  const bool axes_from_input = ctx.opset >= input_axes_opset;
  const bool noop_with_empty = ctx.node.attr_int("noop_with_empty_axes", 0) != 0;
  auto run = [node = ctx.node, threads = ctx.threads, kind, keepdims, axes_from_input,
              noop_with_empty](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    bool noop = false;
    PTQ_ASSIGN_OR_RETURN(std::vector<bool> reduce,
                         reduced_dims(node, in, x.rank(), axes_from_input, noop_with_empty, &noop));
    if (noop) std::fill(reduce.begin(), reduce.end(), false);
    const ReducePlan plan = make_plan(x.shape(), reduce, keepdims);
    out[0] = alloc.allocate(x.dtype(), plan.out);
    const std::optional<MiddleBlock> middle =
        has_middle_path(kind) && x.size() > 0 ? middle_block(x.shape(), reduce) : std::nullopt;
    const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        if (middle) return reduce_middle<T>(kind, x.data<T>(), *middle, out[0].data<T>(), threads);
      }
      reduce_typed<T>(kind, x, plan, out[0], threads);
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

// ArgMax / ArgMin along one axis; ties go to the first index, or the last with
// select_last_index.
Expected<std::unique_ptr<Kernel>> make_arg(const KernelContext& ctx, bool is_max) {
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  const bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  const bool last = ctx.node.attr_int("select_last_index", 0) != 0;
  auto run = [node = ctx.node, threads = ctx.threads, axis_attr, keepdims, last, is_max](
                 Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    std::vector<bool> reduce(static_cast<size_t>(x.rank()), false);
    reduce[static_cast<size_t>(axis)] = true;
    const ReducePlan plan = make_plan(x.shape(), reduce, keepdims);
    if (x.dim(axis) == 0) return node_error(node, "cannot take the arg of an empty axis");
    out[0] = alloc.allocate(ir::DType::kInt64, plan.out);
    int64_t* dst = out[0].data<int64_t>();
    const int64_t n = x.dim(axis);
    const int64_t stride = plan.red_strides[0];
    const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      parallel_for(threads, out[0].size(), [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const T* p = src + base_offset(plan, o);
          int64_t best = 0;
          for (int64_t j = 1; j < n; ++j) {
            const T v = p[j * stride];
            const T cur = p[best * stride];
            const bool better = is_max ? (last ? v >= cur : v > cur) : (last ? v <= cur : v < cur);
            if (better) best = j;
          }
          dst[o] = best;
        }
      }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1)));
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere. Before opset 13 the input is
// seen as 2-D [prod(dims < axis), prod(dims >= axis)] (default axis 1); from 13 on it works
// along one axis (default -1).
Expected<std::unique_ptr<Kernel>> make_hardmax_kernel(const KernelContext& ctx) {
  const bool flatten = ctx.opset < 13;
  const int64_t axis_attr = ctx.node.attr_int("axis", flatten ? 1 : -1);
  auto run = [node = ctx.node, axis_attr, flatten](Inputs in, Outputs out,
                                                   Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    const auto a = static_cast<size_t>(axis);
    const int64_t outer = dims_product(x.shape(), 0, a);
    const int64_t n = flatten ? dims_product(x.shape(), a, x.shape().size()) : x.dim(axis);
    const int64_t inner = flatten ? 1 : dims_product(x.shape(), a + 1, x.shape().size());
    out[0] = alloc.allocate(x.dtype(), x.shape());
    const bool ok = dispatch_float(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = x.data<T>();
      T* dst = out[0].data<T>();
      std::fill(dst, dst + x.size(), T(0));
      if (n == 0) return;
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const T* p = src + o * n * inner + i;
          int64_t best = 0;
          for (int64_t j = 1; j < n; ++j) {
            if (p[j * inner] > p[best * inner]) best = j;
          }
          dst[(o * n + best) * inner + i] = T(1);
        }
      }
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_hardmax(const KernelContext& ctx) {
  return make_hardmax_kernel(ctx);
}

Expected<std::unique_ptr<Kernel>> make_reduce_sum(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kSum, 13);
}
Expected<std::unique_ptr<Kernel>> make_reduce_mean(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kMean, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_max(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kMax, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_min(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kMin, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_prod(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kProd, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_l1(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kL1, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_l2(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kL2, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_sum_square(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kSumSquare, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_log_sum(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kLogSum, 18);
}
Expected<std::unique_ptr<Kernel>> make_reduce_log_sum_exp(const KernelContext& ctx) {
  return make_reduce(ctx, Kind::kLogSumExp, 18);
}
Expected<std::unique_ptr<Kernel>> make_arg_max(const KernelContext& ctx) {
  return make_arg(ctx, true);
}
Expected<std::unique_ptr<Kernel>> make_arg_min(const KernelContext& ctx) {
  return make_arg(ctx, false);
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
