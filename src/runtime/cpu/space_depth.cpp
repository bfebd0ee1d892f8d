// DepthToSpace and SpaceToDepth: a 6-D reshape, a transpose and a reshape, done as one strided
// copy (bytes only, any element type).
#include "data_movement.h"
#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// Copies x viewed as `view` (6-D, row-major) permuted by `perm` into out (same bytes, new shape).
void permute_copy(const ir::Tensor& x, const ir::Shape& view, const std::array<size_t, 6>& perm,
                  ir::Tensor& out, int threads) {
  const std::vector<int64_t> st = strides_of(view);
  ir::Shape shape(6);
  std::vector<int64_t> src_strides(6);
  for (size_t i = 0; i < 6; ++i) {
    shape[i] = view[perm[i]];
    src_strides[i] = st[perm[i]];
  }
  strided_copy(ir::dtype_size(x.dtype()), shape, static_cast<const std::byte*>(x.raw()), 0,
               src_strides, static_cast<std::byte*>(out.raw()), threads);
}

Status check_4d(const ir::Node& node, const ir::Tensor& x, int64_t b) {
  if (x.rank() != 4) return node_error(node, "input must be 4-D, got {}", ir::shape_str(x.shape()));
  if (b < 1) return node_error(node, "blocksize {} is invalid", b);
  if (ir::dtype_size(x.dtype()) == 0) return unsupported_dtype(node, x.dtype());
  return Status::ok();
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_depth_to_space(const KernelContext& ctx) {
  const int64_t b = ctx.node.attr_int("blocksize", 0);
  const bool crd = ctx.node.attr_string("mode", "DCR") == "CRD";
  return make_kernel([node = ctx.node, threads = ctx.threads, b, crd](
                         Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    PTQ_RETURN_IF_ERROR(check_4d(node, x, b));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (c % (b * b) != 0) return node_error(node, "channels {} are not a multiple of {}", c, b * b);
    const int64_t oc = c / (b * b);
    out[0] = alloc.allocate(x.dtype(), {n, oc, h * b, w * b});
    if (crd) {
      permute_copy(x, {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out[0], threads);
    } else {
      permute_copy(x, {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, out[0], threads);
    }
    return Status::ok();
  });
}

Expected<std::unique_ptr<Kernel>> make_space_to_depth(const KernelContext& ctx) {
  const int64_t b = ctx.node.attr_int("blocksize", 0);
  return make_kernel([node = ctx.node, threads = ctx.threads, b](Inputs in, Outputs out,
                                                                 Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    PTQ_RETURN_IF_ERROR(check_4d(node, x, b));
    const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (h % b != 0 || w % b != 0) return node_error(node, "H and W must be multiples of {}", b);
    out[0] = alloc.allocate(x.dtype(), {n, c * b * b, h / b, w / b});
    permute_copy(x, {n, c, h / b, b, w / b, b}, {0, 3, 5, 1, 2, 4}, out[0], threads);
    return Status::ok();
  });
}

}  // namespace ptq::runtime::cpu
