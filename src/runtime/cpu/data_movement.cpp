// Data movement that rearranges bytes: Transpose, Concat, Split, Slice, Tile, Expand. Every op
// works on any fixed-size element type (moves bytes, never interprets them).
#include "data_movement.h"

#include <algorithm>
#include <cstring>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// out[c] = in[c * stride] for whole elements of `elem_size` bytes (typed moves, not memcpy
// calls per element: transposes that move the innermost axis live here).
template <typename T>
void gather_row_typed(const std::byte* in, int64_t stride, int64_t cols, std::byte* out) {
  const T* x = reinterpret_cast<const T*>(in);
  T* y = reinterpret_cast<T*>(out);
  for (int64_t c = 0; c < cols; ++c) y[c] = x[c * stride];
}

void gather_row(size_t elem_size, const std::byte* in, int64_t stride, int64_t cols,
                std::byte* out) {
  switch (elem_size) {
    case 1: return gather_row_typed<uint8_t>(in, stride, cols, out);
    case 2: return gather_row_typed<uint16_t>(in, stride, cols, out);
    case 4: return gather_row_typed<uint32_t>(in, stride, cols, out);
    case 8: return gather_row_typed<uint64_t>(in, stride, cols, out);
    default:
      for (int64_t c = 0; c < cols; ++c) {
        std::memcpy(out + c * static_cast<int64_t>(elem_size),
                    in + c * stride * static_cast<int64_t>(elem_size), elem_size);
      }
  }
}

}  // namespace

void strided_copy(size_t elem_size, const ir::Shape& out_shape, const std::byte* src,
                  int64_t base, const std::vector<int64_t>& src_strides, std::byte* dst,
                  int threads) {
  const int64_t total = ir::num_elements(out_shape);
  if (total == 0) return;
  const size_t rank = out_shape.size();
  const int64_t cols = rank == 0 ? 1 : out_shape.back();
  const int64_t col_stride = rank == 0 ? 0 : src_strides.back();
  const int64_t rows = total / cols;
  const auto es = static_cast<int64_t>(elem_size);
  parallel_for(threads, rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t off = base;
      int64_t rem = r;
      for (size_t d = rank - (rank > 0 ? 1 : 0); d-- > 0 && rem > 0;) {
        off += (rem % out_shape[d]) * src_strides[d];
        rem /= out_shape[d];
      }
      std::byte* out = dst + r * cols * es;
      if (col_stride == 1) {
        std::memcpy(out, src + off * es, static_cast<size_t>(cols * es));
      } else {
        gather_row(elem_size, src + off * es, col_stride, cols, out);
      }
    }
  }, std::max<int64_t>(1, 4096 / std::max<int64_t>(cols, 1)));
}

namespace {

const std::byte* bytes_of(const ir::Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* bytes_of(ir::Tensor& t) { return static_cast<std::byte*>(t.raw()); }

Status check_fixed_size(const ir::Node& node, const ir::Tensor& t) {
  return ir::dtype_size(t.dtype()) > 0 ? Status::ok() : unsupported_dtype(node, t.dtype());
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_transpose(const KernelContext& ctx) {
  const std::optional<std::vector<int64_t>> perm_attr =
      ctx.node.has_attr("perm") ? std::optional(ctx.node.attr_ints("perm", {})) : std::nullopt;
  return make_kernel([node = ctx.node, threads = ctx.threads, perm_attr](
                         Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    PTQ_RETURN_IF_ERROR(check_fixed_size(node, x));
    const auto rank = static_cast<size_t>(x.rank());
    std::vector<int64_t> perm(rank);
    if (perm_attr) {
      perm = *perm_attr;
    } else {
      for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    }
    std::vector<bool> seen(rank, false);
    if (perm.size() != rank)
      return node_error(node, "perm has {} entries for rank {}", perm.size(), rank);
    for (int64_t& p : perm) {
      PTQ_ASSIGN_OR_RETURN(p, normalize_axis(node, p, static_cast<int64_t>(rank)));
      if (seen[static_cast<size_t>(p)]) return node_error(node, "perm repeats axis {}", p);
      seen[static_cast<size_t>(p)] = true;
    }
    const std::vector<int64_t> in_strides = strides_of(x.shape());
    ir::Shape shape(rank);
    std::vector<int64_t> src_strides(rank);
    for (size_t i = 0; i < rank; ++i) {
      shape[i] = x.dim(perm[i]);
      src_strides[i] = in_strides[static_cast<size_t>(perm[i])];
    }
    out[0] = alloc.allocate(x.dtype(), shape);
    strided_copy(ir::dtype_size(x.dtype()), shape, bytes_of(x), 0, src_strides, bytes_of(out[0]),
                 threads);
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_concat(const KernelContext& ctx) {
  if (!ctx.node.has_attr("axis")) return node_error(ctx.node, "attribute 'axis' is missing");
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  return make_kernel([node = ctx.node, threads = ctx.threads, axis_attr](
                         Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& first = *in[0];
    PTQ_RETURN_IF_ERROR(check_fixed_size(node, first));
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, first.rank()));
    ir::Shape shape = first.shape();
    shape[static_cast<size_t>(axis)] = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      if (in[k] == nullptr) return node_error(node, "input {} is missing", k);
      const ir::Tensor& t = *in[k];
      bool same = t.dtype() == first.dtype() && t.rank() == first.rank();
      for (int64_t d = 0; same && d < t.rank(); ++d) same = d == axis || t.dim(d) == first.dim(d);
      if (!same) {
        return node_error(node, "input {} ({} {}) does not match input 0 ({} {})", k,
                          ir::dtype_name(t.dtype()), ir::shape_str(t.shape()),
                          ir::dtype_name(first.dtype()), ir::shape_str(first.shape()));
      }
      shape[static_cast<size_t>(axis)] += t.dim(axis);
    }
    out[0] = alloc.allocate(first.dtype(), shape);
    const auto es = static_cast<int64_t>(ir::dtype_size(first.dtype()));
    const int64_t outer = dims_product(shape, 0, static_cast<size_t>(axis));
    const int64_t inner = dims_product(shape, static_cast<size_t>(axis) + 1, shape.size()) * es;
    const int64_t out_row = shape[static_cast<size_t>(axis)] * inner;
    std::byte* dst = bytes_of(out[0]);
    parallel_for(threads, outer, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        int64_t at = o * out_row;
        for (const ir::Tensor* t : in) {
          const int64_t chunk = t->dim(axis) * inner;
          if (chunk > 0)
            std::memcpy(dst + at, bytes_of(*t) + o * chunk, static_cast<size_t>(chunk));
          at += chunk;
        }
      }
    }, std::max<int64_t>(1, 65536 / std::max<int64_t>(out_row, 1)));
    return Status::ok();
  });
}

// Split: sizes from the 'split' attribute (< 13) or input 1 (>= 13); else num_outputs (>= 18,
// chunks of ceil(dim / n), the last one smaller) or equal parts, one per output.
Expected<std::unique_ptr<Kernel>> make_split(const KernelContext& ctx) {
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  const bool split_input = ctx.opset >= 13;
  const std::vector<int64_t> split_attr = ctx.node.attr_ints("split", {});
  const int64_t num_outputs = ctx.node.attr_int("num_outputs", 0);
  return make_kernel([node = ctx.node, threads = ctx.threads, axis_attr, split_input, split_attr,
                      num_outputs](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    PTQ_RETURN_IF_ERROR(check_fixed_size(node, x));
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    const int64_t dim = x.dim(axis);
    const auto n = static_cast<int64_t>(out.size());
    std::vector<int64_t> sizes = split_attr;
    if (split_input && input_or_null(in, 1) != nullptr) sizes = to_int64s(*in[1]);
    if (sizes.empty()) {
      const int64_t parts = num_outputs > 0 ? num_outputs : n;
      if (num_outputs == 0 && dim % parts != 0) {
        return node_error(node, "axis {} of size {} does not split into {} equal parts", axis, dim,
                          parts);
      }
      const int64_t chunk = (dim + parts - 1) / parts;
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(std::clamp(dim - i * chunk, int64_t{0}, chunk));
    }
    int64_t sum = 0;
    bool negative = false;
    for (int64_t s : sizes) {
      sum += s;
      negative = negative || s < 0;
    }
    if (static_cast<int64_t>(sizes.size()) != n || sum != dim || negative) {
      return node_error(node, "split sizes {} do not cover axis {} of size {} in {} outputs",
                        ir::shape_str(sizes), axis, dim, n);
    }
    const std::vector<int64_t> in_strides = strides_of(x.shape());
    int64_t start = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      ir::Shape shape = x.shape();
      shape[static_cast<size_t>(axis)] = sizes[k];
      out[k] = alloc.allocate(x.dtype(), shape);
      strided_copy(ir::dtype_size(x.dtype()), shape, bytes_of(x),
                   start * in_strides[static_cast<size_t>(axis)], in_strides, bytes_of(out[k]),
                   threads);
      start += sizes[k];
    }
    return Status::ok();
  });
}

namespace {

// Slice parameters of one axis after ONNX's clamping rules.
struct AxisSlice {
  int64_t start = 0;
  int64_t step = 1;
  int64_t count = 0;
};

AxisSlice clamp_slice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  AxisSlice s;
  s.step = step;
  if (dim == 0) return s;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp(start, int64_t{0}, dim);
    end = std::clamp(end, int64_t{0}, dim);
    s.count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp(start, int64_t{0}, dim - 1);
    end = std::clamp(end, int64_t{-1}, dim - 1);
    s.count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  s.start = start;
  return s;
}

}  // namespace

// Slice: starts/ends/axes attributes before opset 10, inputs from 10 on (axes and steps
// optional). Out-of-range starts and ends clamp; ends beyond INT_MAX mean "to the end".
Expected<std::unique_ptr<Kernel>> make_slice(const KernelContext& ctx) {
  const bool from_inputs = ctx.opset >= 10;
  return make_kernel([node = ctx.node, threads = ctx.threads, from_inputs](
                         Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, from_inputs ? 3 : 1));
    const ir::Tensor& x = *in[0];
    PTQ_RETURN_IF_ERROR(check_fixed_size(node, x));
    std::vector<int64_t> starts, ends, axes, steps;
    if (from_inputs) {
      starts = to_int64s(*in[1]);
      ends = to_int64s(*in[2]);
      if (const ir::Tensor* t = input_or_null(in, 3)) axes = to_int64s(*t);
      if (const ir::Tensor* t = input_or_null(in, 4)) steps = to_int64s(*t);
    } else {
      starts = node.attr_ints("starts", {});
      ends = node.attr_ints("ends", {});
      axes = node.attr_ints("axes", {});
    }
    if (axes.empty()) {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size()) {
      return node_error(node, "starts, ends, axes and steps differ in length");
    }
    const size_t rank = x.shape().size();
    std::vector<AxisSlice> per_axis(rank);
    for (size_t d = 0; d < rank; ++d) per_axis[d] = {0, 1, x.dim(static_cast<int64_t>(d))};
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < starts.size(); ++i) {
      PTQ_ASSIGN_OR_RETURN(const int64_t a, normalize_axis(node, axes[i], x.rank()));
      if (seen[static_cast<size_t>(a)]) return node_error(node, "axis {} is sliced twice", a);
      seen[static_cast<size_t>(a)] = true;
      if (steps[i] == 0) return node_error(node, "step 0 on axis {}", a);
      per_axis[static_cast<size_t>(a)] = clamp_slice(x.dim(a), starts[i], ends[i], steps[i]);
    }
    const std::vector<int64_t> in_strides = strides_of(x.shape());
    ir::Shape shape(rank);
    std::vector<int64_t> src_strides(rank);
    int64_t base = 0;
    for (size_t d = 0; d < rank; ++d) {
      shape[d] = per_axis[d].count;
      src_strides[d] = in_strides[d] * per_axis[d].step;
      base += per_axis[d].start * in_strides[d];
    }
    out[0] = alloc.allocate(x.dtype(), shape);
    strided_copy(ir::dtype_size(x.dtype()), shape, bytes_of(x), base, src_strides,
                 bytes_of(out[0]), threads);
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_tile(const KernelContext& ctx) {
  return make_kernel([node = ctx.node, threads = ctx.threads](Inputs in, Outputs out,
                                                              Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& x = *in[0];
    PTQ_RETURN_IF_ERROR(check_fixed_size(node, x));
    const std::vector<int64_t> repeats = to_int64s(*in[1]);
    if (static_cast<int64_t>(repeats.size()) != x.rank()) {
      return node_error(node, "repeats has {} entries for rank {}", repeats.size(), x.rank());
    }
    const size_t rank = repeats.size();
    ir::Shape shape(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (repeats[d] < 0) return node_error(node, "repeats[{}] = {} is negative", d, repeats[d]);
      shape[d] = x.shape()[d] * repeats[d];
    }
    out[0] = alloc.allocate(x.dtype(), shape);
    const int64_t total = out[0].size();
    if (total == 0) return Status::ok();
    // Output element idx reads input element idx mod in_shape, dim by dim.
    const std::vector<int64_t> in_strides = strides_of(x.shape());
    const auto es = ir::dtype_size(x.dtype());
    const std::byte* src = bytes_of(x);
    std::byte* dst = bytes_of(out[0]);
    const int64_t cols = rank == 0 ? 1 : shape.back();
    const int64_t in_cols = rank == 0 ? 1 : x.shape().back();
    parallel_for(threads, total / cols, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t off = 0;
        int64_t rem = r;
        for (size_t d = rank - (rank > 0 ? 1 : 0); d-- > 0;) {
          off += (rem % shape[d]) % x.shape()[d] * in_strides[d];
          rem /= shape[d];
        }
        for (int64_t c = 0; c < cols; c += in_cols) {
          std::memcpy(dst + (r * cols + c) * static_cast<int64_t>(es),
                      src + off * static_cast<int64_t>(es), static_cast<size_t>(in_cols) * es);
        }
      }
    });
    return Status::ok();
  });
}

// Expand: bidirectional broadcast of X with the given shape.
Expected<std::unique_ptr<Kernel>> make_expand(const KernelContext& ctx) {
  return make_kernel([node = ctx.node, threads = ctx.threads](Inputs in, Outputs out,
                                                              Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& x = *in[0];
    PTQ_RETURN_IF_ERROR(check_fixed_size(node, x));
    const ir::Shape shapes[] = {x.shape(), to_int64s(*in[1])};
    PTQ_ASSIGN_OR_RETURN(ir::Shape shape, broadcast_all(node, shapes));
    out[0] = alloc.allocate(x.dtype(), shape);
    broadcast_copy_bytes(x, out[0], threads);
    return Status::ok();
  });
}

}  // namespace ptq::runtime::cpu
