// Indexed reads and writes: Gather, GatherElements, GatherND, Compress, ScatterElements (and
// its deprecated alias Scatter), ScatterND.
// Indices may be negative (counted from the end); out-of-range indices are errors naming the
// node, never out-of-bounds reads.
#include <cstring>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

const std::byte* bytes_of(const ir::Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* bytes_of(ir::Tensor& t) { return static_cast<std::byte*>(t.raw()); }

// Indices as int64 with negatives wrapped; fails on any index outside [-dim, dim).
Expected<std::vector<int64_t>> checked_indices(const ir::Node& node, const ir::Tensor& t,
                                               int64_t dim) {
  if (!is_integer(t.dtype())) return node_error(node, "indices must be integers");
  std::vector<int64_t> v = to_int64s(t);
  for (int64_t& i : v) {
    if (i < -dim || i >= dim)
      return node_error(node, "index {} is out of range [-{}, {})", i, dim, dim);
    if (i < 0) i += dim;
  }
  return v;
}

Status check_data(const ir::Node& node, const ir::Tensor& t) {
  return ir::dtype_size(t.dtype()) > 0 ? Status::ok() : unsupported_dtype(node, t.dtype());
}

// Dispatches on element size so that scatter/gather move whole elements.
template <typename F>
void by_element_size(size_t size, F&& fn) {
  switch (size) {
    case 1: fn(TypeTag<uint8_t>{}); break;
    case 2: fn(TypeTag<uint16_t>{}); break;
    case 4: fn(TypeTag<uint32_t>{}); break;
    default: fn(TypeTag<uint64_t>{}); break;
  }
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_gather(const KernelContext& ctx) {
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  return make_kernel([node = ctx.node, threads = ctx.threads, axis_attr](
                         Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& data = *in[0];
    PTQ_RETURN_IF_ERROR(check_data(node, data));
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, data.rank()));
    PTQ_ASSIGN_OR_RETURN(const std::vector<int64_t> idx,
                         checked_indices(node, *in[1], data.dim(axis)));
    const auto a = static_cast<size_t>(axis);
    ir::Shape shape(data.shape().begin(), data.shape().begin() + axis);
    shape.insert(shape.end(), in[1]->shape().begin(), in[1]->shape().end());
    shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
    out[0] = alloc.allocate(data.dtype(), shape);
    const auto es = static_cast<int64_t>(ir::dtype_size(data.dtype()));
    const int64_t outer = dims_product(data.shape(), 0, a);
    const int64_t inner = dims_product(data.shape(), a + 1, data.shape().size()) * es;
    const int64_t dim = data.dim(axis);
    const auto n = static_cast<int64_t>(idx.size());
    const std::byte* src = bytes_of(data);
    std::byte* dst = bytes_of(out[0]);
    parallel_for(threads, outer * n, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t o = r / n;
        const int64_t j = r % n;
        std::memcpy(dst + r * inner, src + (o * dim + idx[static_cast<size_t>(j)]) * inner,
                    static_cast<size_t>(inner));
      }
    }, std::max<int64_t>(1, 65536 / std::max<int64_t>(inner, 1)));
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_gather_elements(const KernelContext& ctx) {
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  return make_kernel([node = ctx.node, threads = ctx.threads, axis_attr](
                         Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& data = *in[0];
    const ir::Tensor& indices = *in[1];
    PTQ_RETURN_IF_ERROR(check_data(node, data));
    if (indices.rank() != data.rank()) {
      return node_error(node, "indices rank {} differs from data rank {}", indices.rank(),
                        data.rank());
    }
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, data.rank()));
    PTQ_ASSIGN_OR_RETURN(const std::vector<int64_t> idx,
                         checked_indices(node, indices, data.dim(axis)));
    out[0] = alloc.allocate(data.dtype(), indices.shape());
    const ir::Shape& shape = indices.shape();
    const std::vector<int64_t> ds = strides_of(data.shape());
    by_element_size(ir::dtype_size(data.dtype()), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data.data<T>();
      T* dst = out[0].data<T>();
      parallel_for(threads, indices.size(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          int64_t rem = i;
          int64_t off = 0;
          for (size_t d = shape.size(); d-- > 0;) {
            const int64_t c = rem % shape[d];
            rem /= shape[d];
            off += (static_cast<int64_t>(d) == axis ? idx[static_cast<size_t>(i)] : c) * ds[d];
          }
          dst[i] = src[off];
        }
      }, kElementwiseGrain);
    });
    return Status::ok();
  });
}

// GatherND with batch_dims: each index tuple of the last indices dim selects a slice.
Expected<std::unique_ptr<Kernel>> make_gather_nd(const KernelContext& ctx) {
  const int64_t batch_dims = ctx.node.attr_int("batch_dims", 0);
  return make_kernel([node = ctx.node, batch_dims](Inputs in, Outputs out,
                                                   Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& data = *in[0];
    const ir::Tensor& indices = *in[1];
    PTQ_RETURN_IF_ERROR(check_data(node, data));
    const int64_t q = indices.rank();
    const int64_t r = data.rank();
    if (q < 1 || batch_dims < 0 || batch_dims >= std::min(q, r)) {
      return node_error(node, "batch_dims {} is invalid for ranks {} and {}", batch_dims, r, q);
    }
    const int64_t k = indices.dim(q - 1);
    if (k < 1 || batch_dims + k > r)
      return node_error(node, "index tuples of length {} are too long", k);
    const auto b = static_cast<size_t>(batch_dims);
    ir::Shape shape(indices.shape().begin(), indices.shape().end() - 1);
    shape.insert(shape.end(), data.shape().begin() + batch_dims + k, data.shape().end());
    out[0] = alloc.allocate(data.dtype(), shape);
    const std::vector<int64_t> idx = to_int64s(indices);
    const auto es = static_cast<int64_t>(ir::dtype_size(data.dtype()));
    const int64_t batch = dims_product(data.shape(), 0, b);
    const int64_t slice =
        dims_product(data.shape(), b + static_cast<size_t>(k), data.shape().size());
    const int64_t per_batch_data = dims_product(data.shape(), b, data.shape().size());
    const int64_t tuples = indices.size() / k / std::max<int64_t>(batch, 1);
    const std::vector<int64_t> ds = strides_of(data.shape());
    for (int64_t bi = 0; bi < batch; ++bi) {
      for (int64_t t = 0; t < tuples; ++t) {
        const int64_t tuple_at = (bi * tuples + t) * k;
        int64_t off = bi * per_batch_data;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t dim = data.dim(batch_dims + j);
          int64_t v = idx[static_cast<size_t>(tuple_at + j)];
          if (v < -dim || v >= dim)
            return node_error(node, "index {} is out of range for dim {}", v, dim);
          if (v < 0) v += dim;
          off += v * ds[b + static_cast<size_t>(j)];
        }
        std::memcpy(bytes_of(out[0]) + (bi * tuples + t) * slice * es, bytes_of(data) + off * es,
                    static_cast<size_t>(slice * es));
      }
    }
    return Status::ok();
  });
}

// Compress: the slices along `axis` (or of the flattened input when absent) whose condition is
// true; a condition shorter than the axis leaves the rest out.
Expected<std::unique_ptr<Kernel>> make_compress(const KernelContext& ctx) {
  const std::optional<int64_t> axis_attr =
      ctx.node.has_attr("axis") ? std::optional(ctx.node.attr_int("axis", 0)) : std::nullopt;
  return make_kernel([node = ctx.node, axis_attr](Inputs in, Outputs out,
                                                  Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    PTQ_RETURN_IF_ERROR(check_data(node, *in[0]));
    const ir::Tensor x = axis_attr ? in[0]->view() : view_as(*in[0], {in[0]->size()});
    const ir::Tensor& cond = *in[1];
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr.value_or(0), x.rank()));
    if (cond.rank() != 1 || cond.dim(0) > x.dim(axis)) {
      return node_error(node, "condition {} does not fit axis {} of size {}",
                        ir::shape_str(cond.shape()), axis, x.dim(axis));
    }
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < cond.size(); ++i) {
      if (cond.as_double(i) != 0) keep.push_back(i);
    }
    ir::Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
    out[0] = alloc.allocate(x.dtype(), shape);
    const auto es = static_cast<int64_t>(ir::dtype_size(x.dtype()));
    const int64_t outer = dims_product(x.shape(), 0, static_cast<size_t>(axis));
    const int64_t inner =
        dims_product(x.shape(), static_cast<size_t>(axis) + 1, x.shape().size()) * es;
    const auto n = static_cast<int64_t>(keep.size());
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < n; ++j) {
        std::memcpy(bytes_of(out[0]) + (o * n + j) * inner,
                    bytes_of(x) + (o * x.dim(axis) + keep[static_cast<size_t>(j)]) * inner,
                    static_cast<size_t>(inner));
      }
    }
    return Status::ok();
  });
}

namespace {

// Combines an update into an existing element per Scatter*'s `reduction`.
template <typename T>
T reduce_into(const std::string& reduction, T old, T update) {
  if (reduction == "add") return static_cast<T>(old + update);
  if (reduction == "mul") return static_cast<T>(old * update);
  if (reduction == "max") return old < update ? update : old;
  if (reduction == "min") return update < old ? update : old;
  return update;
}

bool known_reduction(const std::string& r) {
  return r == "none" || r == "add" || r == "mul" || r == "max" || r == "min";
}

}  // namespace

// ScatterElements: a copy of data with updates written at indices along axis, in order (later
// duplicates win for "none", as the reference implementation).
Expected<std::unique_ptr<Kernel>> make_scatter_elements(const KernelContext& ctx) {
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  const std::string reduction = ctx.node.attr_string("reduction", "none");
  if (!known_reduction(reduction)) return node_error(ctx.node, "unknown reduction '{}'", reduction);
  return make_kernel([node = ctx.node, axis_attr, reduction](Inputs in, Outputs out,
                                                            Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const ir::Tensor& data = *in[0];
    const ir::Tensor& indices = *in[1];
    const ir::Tensor& updates = *in[2];
    if (updates.shape() != indices.shape() || updates.dtype() != data.dtype() ||
        indices.rank() != data.rank()) {
      return node_error(node, "indices {} and updates {} do not match data {}",
                        ir::shape_str(indices.shape()), ir::shape_str(updates.shape()),
                        ir::shape_str(data.shape()));
    }
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, data.rank()));
    PTQ_ASSIGN_OR_RETURN(const std::vector<int64_t> idx,
                         checked_indices(node, indices, data.dim(axis)));
    out[0] = alloc.allocate(data.dtype(), data.shape());
    if (data.nbytes() > 0) std::memcpy(out[0].raw(), data.raw(), data.nbytes());
    const std::vector<int64_t> ds = strides_of(data.shape());
    const ir::Shape& shape = indices.shape();
    const bool ok = dispatch_all(data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* u = updates.data<T>();
      T* dst = out[0].data<T>();
      for (int64_t i = 0; i < indices.size(); ++i) {
        int64_t rem = i;
        int64_t off = 0;
        for (size_t d = shape.size(); d-- > 0;) {
          const int64_t c = rem % shape[d];
          rem /= shape[d];
          off += (static_cast<int64_t>(d) == axis ? idx[static_cast<size_t>(i)] : c) * ds[d];
        }
        dst[off] = reduce_into<T>(reduction, dst[off], u[i]);
      }
    });
    return ok ? Status::ok() : unsupported_dtype(node, data.dtype());
  });
}

Expected<std::unique_ptr<Kernel>> make_scatter_nd(const KernelContext& ctx) {
  const std::string reduction = ctx.node.attr_string("reduction", "none");
  if (!known_reduction(reduction)) return node_error(ctx.node, "unknown reduction '{}'", reduction);
  return make_kernel([node = ctx.node, reduction](Inputs in, Outputs out,
                                                  Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 3));
    const ir::Tensor& data = *in[0];
    const ir::Tensor& indices = *in[1];
    const ir::Tensor& updates = *in[2];
    const int64_t q = indices.rank();
    const int64_t k = q > 0 ? indices.dim(q - 1) : 0;
    if (q < 1 || k < 1 || k > data.rank() || updates.dtype() != data.dtype()) {
      return node_error(node, "indices {} do not fit data {}", ir::shape_str(indices.shape()),
                        ir::shape_str(data.shape()));
    }
    out[0] = alloc.allocate(data.dtype(), data.shape());
    if (data.nbytes() > 0) std::memcpy(out[0].raw(), data.raw(), data.nbytes());
    const std::vector<int64_t> idx = to_int64s(indices);
    const std::vector<int64_t> ds = strides_of(data.shape());
    const int64_t slice = dims_product(data.shape(), static_cast<size_t>(k), data.shape().size());
    const int64_t tuples = indices.size() / k;
    if (updates.size() != tuples * slice) return node_error(node, "updates have the wrong size");
    Status status;
    const bool ok = dispatch_all(data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* u = updates.data<T>();
      T* dst = out[0].data<T>();
      for (int64_t t = 0; t < tuples && status.is_ok(); ++t) {
        int64_t off = 0;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t dim = data.dim(j);
          int64_t v = idx[static_cast<size_t>(t * k + j)];
          if (v < -dim || v >= dim) {
            status = node_error(node, "index {} is out of range for dim {}", v, dim);
            return;
          }
          off += (v < 0 ? v + dim : v) * ds[static_cast<size_t>(j)];
        }
        for (int64_t s = 0; s < slice; ++s) {
          dst[off + s] = reduce_into<T>(reduction, dst[off + s], u[t * slice + s]);
        }
      }
    });
    PTQ_RETURN_IF_ERROR(status);
    return ok ? Status::ok() : unsupported_dtype(node, data.dtype());
  });
}

}  // namespace ptq::runtime::cpu
