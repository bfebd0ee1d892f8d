// ReverseSequence (opset 10): for each batch entry b, the first sequence_lens[b] steps along
// time_axis are reversed and the rest copied. Any element type (bytes are moved).
#include <cstring>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

struct Axes {
  int64_t time = 0, batch = 1;
};

// Copies every element of x into y, the time index reversed below each batch's length.
void reverse(const ir::Tensor& x, const std::vector<int64_t>& lens, Axes a, ir::Tensor& y,
             int threads) {
  const ir::Shape& s = x.shape();
  const std::vector<int64_t> strides = strides_of(s);
  const auto bytes = static_cast<int64_t>(ir::dtype_size(x.dtype()));
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  const auto ta = static_cast<size_t>(a.time), ba = static_cast<size_t>(a.batch);
  parallel_for(threads, x.size(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t t = i / strides[ta] % s[ta];
      const int64_t len = lens[static_cast<size_t>(i / strides[ba] % s[ba])];
      const int64_t from = t < len ? i + (len - 1 - 2 * t) * strides[ta] : i;
      std::memcpy(dst + i * bytes, src + from * bytes, static_cast<size_t>(bytes));
    }
  }, 4096);
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_reverse_sequence(const KernelContext& ctx) {
  const Axes axes{ctx.node.attr_int("time_axis", 0), ctx.node.attr_int("batch_axis", 1)};
  const bool valid = (axes.time == 0 && axes.batch == 1) || (axes.time == 1 && axes.batch == 0);
  if (!valid) {
    return node_error(ctx.node, "time_axis {} and batch_axis {} must be 0 and 1 in some order",
                      axes.time, axes.batch);
  }
  auto run = [node = ctx.node, threads = ctx.threads, axes](Inputs in, Outputs out,
                                                            Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 2));
    const ir::Tensor& x = *in[0];
    if (x.rank() < 2 || in[1]->rank() != 1 || in[1]->dim(0) != x.dim(axes.batch)) {
      return node_error(node, "input {} and sequence_lens {} do not match on the batch axis {}",
                        ir::shape_str(x.shape()), ir::shape_str(in[1]->shape()), axes.batch);
    }
    std::vector<int64_t> lens = to_int64s(*in[1]);
    for (int64_t& len : lens) {
      if (len < 0 || len > x.dim(axes.time)) {
        return node_error(node, "sequence length {} is outside [0, {}]", len, x.dim(axes.time));
      }
    }
    if (ir::dtype_size(x.dtype()) == 0) return unsupported_dtype(node, x.dtype());
    out[0] = alloc.allocate(x.dtype(), x.shape());
    reverse(x, lens, axes, out[0], threads);
    return Status::ok();
  };
  return make_kernel(run);
}

}  // namespace ptq::runtime::cpu
