// Ops that build tensors from index arithmetic: Trilu, OneHot, NonZero, CumSum.
#include <cstring>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims.
Expected<std::unique_ptr<Kernel>> make_trilu(const KernelContext& ctx) {
  const bool upper = ctx.node.attr_int("upper", 1) != 0;
  return make_kernel([node = ctx.node, upper](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    if (x.rank() < 2) return node_error(node, "input must have rank >= 2");
    const size_t es = ir::dtype_size(x.dtype());
    if (es == 0) return unsupported_dtype(node, x.dtype());
    const int64_t k = input_or_null(in, 1) != nullptr ? in[1]->as_int64(0) : 0;
    const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    out[0] = alloc.allocate(x.dtype(), x.shape());
    const auto* src = static_cast<const std::byte*>(x.raw());
    auto* dst = static_cast<std::byte*>(out[0].raw());
    const int64_t mats = rows * cols == 0 ? 0 : x.size() / (rows * cols);
    for (int64_t m = 0; m < mats; ++m) {
      for (int64_t i = 0; i < rows; ++i) {
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t at = ((m * rows + i) * cols + j) * static_cast<int64_t>(es);
          const bool keep = upper ? j - i >= k : j - i <= k;
          if (keep) std::memcpy(dst + at, src + at, es);
          else std::memset(dst + at, 0, es);
        }
      }
    }
    return Status::ok();
  });
}

// OneHot(indices, depth, values=[off, on]): a new axis of size depth; negative indices count
// from the end; out-of-range indices give an all-off row.
Expected<std::unique_ptr<Kernel>> make_one_hot(const KernelContext& ctx) {
  const int64_t axis_attr = ctx.node.attr_int("axis", -1);
  return make_kernel([node = ctx.node, axis_attr](Inputs in, Outputs out,
                                                  Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const ir::Tensor& idx = *in[0];
    const ir::Tensor& values = *in[2];
    if (in[1]->size() != 1 || values.size() != 2) {
      return node_error(node, "depth must be a scalar and values hold two elements");
    }
    const auto depth = static_cast<int64_t>(in[1]->as_double(0));
    if (depth < 1) return node_error(node, "depth {} is invalid", depth);
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, idx.rank() + 1));
    ir::Shape shape = idx.shape();
    shape.insert(shape.begin() + axis, depth);
    out[0] = alloc.allocate(values.dtype(), shape);
    const size_t es = ir::dtype_size(values.dtype());
    if (es == 0) return unsupported_dtype(node, values.dtype());
    const auto* off = static_cast<const std::byte*>(values.raw());
    const std::byte* on = off + es;
    auto* dst = static_cast<std::byte*>(out[0].raw());
    const int64_t outer = dims_product(idx.shape(), 0, static_cast<size_t>(axis));
    const int64_t inner = dims_product(idx.shape(), static_cast<size_t>(axis), idx.shape().size());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t d = 0; d < depth; ++d) {
        for (int64_t i = 0; i < inner; ++i) {
          auto v = static_cast<int64_t>(idx.as_double(o * inner + i));
          if (v < 0) v += depth;
          const int64_t at = ((o * depth + d) * inner + i) * static_cast<int64_t>(es);
          std::memcpy(dst + at, v == d ? on : off, es);
        }
      }
    }
    return Status::ok();
  });
}

// NonZero: int64 [rank, count] of the indices of non-zero elements, in row-major order.
Expected<std::unique_ptr<Kernel>> make_non_zero(const KernelContext& ctx) {
  return make_kernel([node = ctx.node](Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    if (ir::dtype_size(x.dtype()) == 0) return unsupported_dtype(node, x.dtype());
    std::vector<int64_t> hits;
    for (int64_t i = 0; i < x.size(); ++i) {
      if (x.as_double(i) != 0.0) hits.push_back(i);
    }
    const int64_t rank = x.rank();
    const auto n = static_cast<int64_t>(hits.size());
    out[0] = alloc.allocate(ir::DType::kInt64, {rank, n});
    int64_t* dst = out[0].data<int64_t>();
    for (int64_t j = 0; j < n; ++j) {
      int64_t rem = hits[static_cast<size_t>(j)];
      for (int64_t d = rank; d-- > 0;) {
        dst[d * n + j] = rem % x.dim(d);
        rem /= x.dim(d);
      }
    }
    return Status::ok();
  });
}

// CumSum(x, axis) with exclusive and reverse.
Expected<std::unique_ptr<Kernel>> make_cum_sum(const KernelContext& ctx) {
  const bool exclusive = ctx.node.attr_int("exclusive", 0) != 0;
  const bool reverse = ctx.node.attr_int("reverse", 0) != 0;
  return make_kernel([node = ctx.node, exclusive, reverse](Inputs in, Outputs out,
                                                           Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& x = *in[0];
    if (in[1]->size() != 1) return node_error(node, "axis must be a scalar");
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, in[1]->as_int64(0), x.rank()));
    out[0] = alloc.allocate(x.dtype(), x.shape());
    const int64_t outer = dims_product(x.shape(), 0, static_cast<size_t>(axis));
    const int64_t inner = dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size());
    const int64_t n = x.dim(axis);
    const bool ok =
        dispatch<float, double, int32_t, int64_t, uint32_t, uint64_t>(x.dtype(), [&](auto tag) {
          using T = typename decltype(tag)::type;
          const T* src = x.data<T>();
          T* dst = out[0].data<T>();
          for (int64_t o = 0; o < outer; ++o) {
            for (int64_t i = 0; i < inner; ++i) {
              T acc = 0;
              for (int64_t s = 0; s < n; ++s) {
                const int64_t j = reverse ? n - 1 - s : s;
                const int64_t at = (o * n + j) * inner + i;
                if (exclusive) {
                  dst[at] = acc;
                  acc += src[at];
                } else {
                  acc += src[at];
                  dst[at] = acc;
                }
              }
            }
          }
        });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  });
}

}  // namespace ptq::runtime::cpu
