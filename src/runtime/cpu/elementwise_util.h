// Helpers for the elementwise kernel families (unary maps, binary/ternary broadcasting with
// fast paths, half-precision widening). Built on elementwise_base.h. The loops are templates
// that must be compiled with their caller's instruction set: a file compiled once per level
// (isa_begin.h) includes this after isa_begin.h and gets them in its level's namespace; any
// other file gets them in cpu's.
#pragma once

#if defined(PTQ_ISA) && !defined(PTQ_ISA_NS)
#error "a file compiled once per level includes elementwise_util.h after isa_begin.h"
#endif

#include <array>
#include <cstdint>
#include <vector>

#include "elementwise_base.h"
#include "kernel_util.h"

#if defined(PTQ_ISA_NS)
namespace ptq::runtime::cpu::PTQ_ISA_NS {
#else
namespace ptq::runtime::cpu {
#endif

// Runs `fn` on float32 copies of half-precision inputs, then narrows each float32 output back to
// `half` into tensors from `alloc`. Half types have no arithmetic of their own; computing in
// float32 and rounding once is what ONNX Runtime does for them too.
template <typename F>
Status run_widened(ir::DType half, Inputs inputs, Outputs outputs, Allocator& alloc, int threads,
                   F&& fn) {
  std::vector<ir::Tensor> wide(inputs.size());
  std::vector<const ir::Tensor*> ptrs(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) continue;
    wide[i] = inputs[i]->dtype() == half ? convert(*inputs[i], ir::DType::kFloat32, threads)
                                         : inputs[i]->view();
    ptrs[i] = &wide[i];
  }
  std::vector<ir::Tensor> tmp(outputs.size());
  OwnedAllocator owned;
  PTQ_RETURN_IF_ERROR(fn(Inputs(ptrs), Outputs(tmp), owned));
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (tmp[i].dtype() == ir::DType::kFloat32) {
      outputs[i] = alloc.allocate(half, tmp[i].shape());
      convert_into(tmp[i], outputs[i], threads);
    } else {
      outputs[i] = std::move(tmp[i]);
    }
  }
  return Status::ok();
}

// A kernel running `run` (a KernelFn-like callable) directly, or through run_widened when
// input 0 is float16/bfloat16.
template <typename Run>
Expected<std::unique_ptr<Kernel>> make_widening_kernel(Run run, int threads) {
  return make_kernel([run, threads](Inputs in, Outputs out, Allocator& alloc) -> Status {
    if (!in.empty() && in[0] != nullptr && is_half(in[0]->dtype())) {
      return run_widened(in[0]->dtype(), in, out, alloc, threads, run);
    }
    return run(in, out, alloc);
  });
}

// out[i] = fn(in[i]) for same-shape tensors of element types In and Out.
template <typename In, typename Out, typename F>
void map_unary(const ir::Tensor& in, ir::Tensor& out, int threads, F fn) {
  const In* x = in.data<In>();
  Out* y = out.data<Out>();
  parallel_for(
      threads, in.size(),
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) y[i] = fn(x[i]);
      },
      kElementwiseGrain);
}

// out = fn(a, b) with numpy broadcasting; `out` is pre-allocated with the broadcast shape.
// Fast paths for same shapes and a scalar operand; the general path walks rows.
template <typename A, typename B, typename R, typename F>
void binary_broadcast(const ir::Tensor& a, const ir::Tensor& b, ir::Tensor& out, int threads,
                      F fn) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  R* po = out.data<R>();
  const int64_t n = out.size();
  const bool a_full = a.shape() == out.shape();
  const bool b_full = b.shape() == out.shape();
  if (a_full && b_full) {
    parallel_for(threads, n, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = fn(pa[i], pb[i]);
    }, kElementwiseGrain);
    return;
  }
  if (a_full && b.size() == 1) {
    const B y = pb[0];
    parallel_for(threads, n, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = fn(pa[i], y);
    }, kElementwiseGrain);
    return;
  }
  if (b_full && a.size() == 1) {
    const A x = pa[0];
    parallel_for(threads, n, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) po[i] = fn(x, pb[i]);
    }, kElementwiseGrain);
    return;
  }
  const BroadcastRows<2> br({&a.shape(), &b.shape()}, out.shape());
  const int64_t cols = br.cols;
  const int64_t sa = br.col_stride[0];
  const int64_t sb = br.col_stride[1];
  parallel_for(threads, br.rows, [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      const A* x = pa + br.row_offset(0, r);
      const B* y = pb + br.row_offset(1, r);
      R* z = po + r * cols;
      for (int64_t c = 0; c < cols; ++c) z[c] = fn(x[c * sa], y[c * sb]);
    }
  }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(cols, 1)));
}

// out = fn(a, b, c) with numpy broadcasting (Where).
template <typename A, typename B, typename C, typename R, typename F>
void ternary_broadcast(const ir::Tensor& a, const ir::Tensor& b, const ir::Tensor& c,
                       ir::Tensor& out, int threads, F fn) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  const C* pc = c.data<C>();
  R* po = out.data<R>();
  const BroadcastRows<3> br({&a.shape(), &b.shape(), &c.shape()}, out.shape());
  const int64_t cols = br.cols;
  const auto st = br.col_stride;
  parallel_for(threads, br.rows, [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      const A* x = pa + br.row_offset(0, r);
      const B* y = pb + br.row_offset(1, r);
      const C* z = pc + br.row_offset(2, r);
      R* o = po + r * cols;
      for (int64_t k = 0; k < cols; ++k) o[k] = fn(x[k * st[0]], y[k * st[1]], z[k * st[2]]);
    }
  }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(cols, 1)));
}

// Copies `in` broadcast to `out`'s shape (Expand, the first operand of variadic ops).
template <typename T>
void broadcast_copy(const ir::Tensor& in, ir::Tensor& out, int threads) {
  const T* pi = in.data<T>();
  T* po = out.data<T>();
  const BroadcastRows<1> br({&in.shape()}, out.shape());
  const int64_t cols = br.cols;
  const int64_t s0 = br.col_stride[0];
  parallel_for(threads, br.rows, [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      const T* x = pi + br.row_offset(0, r);
      T* z = po + r * cols;
      for (int64_t c = 0; c < cols; ++c) z[c] = x[c * s0];
    }
  }, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(cols, 1)));
}

// Broadcast copy for any fixed-size dtype (Expand, Where's operands): moves bytes only.
inline void broadcast_copy_bytes(const ir::Tensor& in, ir::Tensor& out, int threads) {
  switch (ir::dtype_size(in.dtype())) {
    case 1: broadcast_copy<uint8_t>(in, out, threads); break;
    case 2: broadcast_copy<uint16_t>(in, out, threads); break;
    case 4: broadcast_copy<uint32_t>(in, out, threads); break;
    case 8: broadcast_copy<uint64_t>(in, out, threads); break;
    default: break;
  }
}


// A kernel applying fn elementwise (same shape, same dtype) for the dtypes `Dispatch` admits;
// float16/bfloat16 are computed in float32 when `widen_half`. `fn` is generic over the element
// type (`[](auto x) { … }`) and must be pure: elements are split across threads.
template <typename Dispatch, typename F>
Expected<std::unique_ptr<Kernel>> make_unary(const KernelContext& ctx, Dispatch dispatch_fn,
                                             bool widen_half, F fn) {
  const int threads = ctx.threads;
  auto run = [node = ctx.node, threads, dispatch_fn, fn](Inputs in, Outputs out,
                                                         Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    out[0] = alloc.allocate(x.dtype(), x.shape());
    const bool ok = dispatch_fn(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_unary<T, T>(x, out[0], threads, [&](T v) { return static_cast<T>(fn(v)); });
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  if (!widen_half) return make_kernel(run);
  return make_widening_kernel(run, threads);
}

// Dispatchers usable as the `Dispatch` argument above.
struct FloatTypes {
  template <typename F>
  bool operator()(ir::DType t, F&& fn) const {
    return dispatch_float(t, std::forward<F>(fn));
  }
};
struct SignedTypes {  // float, double and the signed integers
  template <typename F>
  bool operator()(ir::DType t, F&& fn) const {
    return dispatch<float, double, int8_t, int16_t, int32_t, int64_t>(t, std::forward<F>(fn));
  }
};
struct NumericTypes {
  template <typename F>
  bool operator()(ir::DType t, F&& fn) const {
    return dispatch_numeric(t, std::forward<F>(fn));
  }
};

// Float unary op (float16/bfloat16 through float32).
template <typename F>
Expected<std::unique_ptr<Kernel>> make_float_unary(const KernelContext& ctx, F fn) {
  return make_unary(ctx, FloatTypes{}, true, fn);
}

}  // namespace ptq::runtime::cpu[::PTQ_ISA_NS]
