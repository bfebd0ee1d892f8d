// Helpers shared by the CPU kernels: a lambda-to-Kernel adapter, numpy broadcasting, dtype
// dispatch, kept scratch buffers and a deterministic parallel_for. Op attributes (errors, axes,
// windows) are read by ptq/runtime/op_attrs.h, which the Vulkan ops share.
// Header-only and stable: every kernel file in this folder includes it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ptq/ir.h"
#include "ptq/runtime.h"
#include "ptq/runtime/op_attrs.h"
#include "ptq/runtime/task_pool.h"
#include "ptq/status.h"

namespace ptq::runtime::cpu {

using Inputs = std::span<const ir::Tensor* const>;
using Outputs = std::span<ir::Tensor>;
using KernelFn = std::function<Status(Inputs inputs, Outputs outputs, Allocator& alloc)>;

// Wraps a function into a Kernel. Whatever the function captures is its prepared state.
class SimpleKernel final : public Kernel {
 public:
  explicit SimpleKernel(KernelFn fn) : fn_(std::move(fn)) {}
  Status run(Inputs inputs, Outputs outputs, Allocator& alloc) override {
    return fn_(inputs, outputs, alloc);
  }

 private:
  KernelFn fn_;
};

inline Expected<std::unique_ptr<Kernel>> make_kernel(KernelFn fn) {
  return std::unique_ptr<Kernel>(std::make_unique<SimpleKernel>(std::move(fn)));
}

// ---- inputs ---------------------------------------------------------------------------------

// Input i, or null when omitted / out of range.
inline const ir::Tensor* input_or_null(Inputs inputs, size_t i) {
  return i < inputs.size() ? inputs[i] : nullptr;
}

// Checks that the required inputs [0, n) are present.
inline Status require_inputs(const ir::Node& node, Inputs inputs, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (input_or_null(inputs, i) == nullptr) return node_error(node, "input {} is missing", i);
  }
  return Status::ok();
}

// The constant (initializer) behind node input i, or null: lets factories pack weights once.
inline const ir::Tensor* constant_input(const KernelContext& ctx, size_t i) {
  const std::string& name = ctx.node.input(i);
  if (name.empty() || ctx.graph == nullptr) return nullptr;
  return ctx.graph->initializer(name);
}

// A view of `t`'s bytes with another shape (same element count): what Reshape, Flatten,
// Squeeze, Unsqueeze and Identity output. The executor sees that the output aliases an input
// and keeps the buffer alive until the last alias dies. Never use ir::Tensor::reshaped here:
// it copies an owned tensor (initializers are owned).
inline ir::Tensor view_as(const ir::Tensor& t, ir::Shape shape) {
  return ir::Tensor::borrow(t.dtype(), std::move(shape), t.raw());
}

// ---- shapes ---------------------------------------------------------------------------------

// Row-major element strides of a shape.
inline std::vector<int64_t> strides_of(const ir::Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

// ---- numpy multidirectional broadcasting ----------------------------------------------------

// The broadcast of two shapes, or nullopt when they do not broadcast.
inline std::optional<ir::Shape> broadcast_shapes(const ir::Shape& a, const ir::Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  ir::Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Broadcast of several shapes; the error names the node and every shape.
inline Expected<ir::Shape> broadcast_all(const ir::Node& node, std::span<const ir::Shape> shapes) {
  ir::Shape out;
  for (const ir::Shape& s : shapes) {
    auto b = broadcast_shapes(out, s);
    if (!b) {
      std::string all;
      for (const ir::Shape& x : shapes) all += (all.empty() ? "" : " and ") + ir::shape_str(x);
      return node_error(node, "shapes {} do not broadcast", all);
    }
    out = std::move(*b);
  }
  return out;
}

// Strides of `in` laid over `out` (rank of out): 0 where `in` is broadcast along a dim.
inline std::vector<int64_t> broadcast_strides(const ir::Shape& in, const ir::Shape& out) {
  std::vector<int64_t> s(out.size(), 0);
  const std::vector<int64_t> own = strides_of(in);
  const size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[lead + i] = in[i] == 1 ? 0 : own[i];
  return s;
}

// Visits output elements [begin, end) of `out` in order, calling fn(out_index, offsets) where
// offsets[k] is the element offset into input k (per its broadcast strides).
template <size_t N, typename F>
void for_each_broadcast(const ir::Shape& out, const std::array<std::vector<int64_t>, N>& strides,
                        int64_t begin, int64_t end, F&& fn) {
  if (begin >= end) return;
  const size_t rank = out.size();
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> off{};
  int64_t rem = begin;
  for (size_t d = rank; d-- > 0;) {
    idx[d] = out[d] == 0 ? 0 : rem % out[d];
    rem = out[d] == 0 ? 0 : rem / out[d];
    for (size_t k = 0; k < N; ++k) off[k] += idx[d] * strides[k][d];
  }
  for (int64_t i = begin; i < end; ++i) {
    fn(i, off);
    for (size_t d = rank; d-- > 0;) {  // odometer increment
      ++idx[d];
      for (size_t k = 0; k < N; ++k) off[k] += strides[k][d];
      if (idx[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) off[k] -= idx[d] * strides[k][d];
      idx[d] = 0;
    }
  }
}

// ---- dtype dispatch -------------------------------------------------------------------------

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) for the T among Ts whose DType is `t`; returns false if none matched.
template <typename... Ts, typename F>
bool dispatch(ir::DType t, F&& fn) {
  return ((ir::dtype_of<Ts>() == t ? (fn(TypeTag<Ts>{}), true) : false) || ...);
}

// Float, all integer types (signed and unsigned, 8–64 bit).
template <typename F>
bool dispatch_numeric(ir::DType t, F&& fn) {
  return dispatch<float, double, int8_t, uint8_t, int16_t, uint16_t, int32_t, int64_t, uint32_t,
                  uint64_t>(t, std::forward<F>(fn));
}
// Numeric plus bool.
template <typename F>
bool dispatch_all(ir::DType t, F&& fn) {
  return dispatch<float, double, int8_t, uint8_t, int16_t, uint16_t, int32_t, int64_t, uint32_t,
                  uint64_t, bool>(t, std::forward<F>(fn));
}
template <typename F>
bool dispatch_float(ir::DType t, F&& fn) {
  return dispatch<float, double>(t, std::forward<F>(fn));
}

inline Status unsupported_dtype(const ir::Node& node, ir::DType t) {
  return node_error(node, "element type {} is not supported", ir::dtype_name(t));
}

// ---- scratch ---------------------------------------------------------------------------------

// At least n floats of `buffer`, grown when needed and kept between calls (a kernel's scratch,
// usually thread_local: a fresh vector per call would zero-fill and page-fault it each time).
inline float* grown(std::vector<float>& buffer, size_t n) {
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// ---- threading ------------------------------------------------------------------------------

// Splits [0, n) into contiguous ranges of at least `min_per_thread` elements, up to four per
// thread, and calls fn(begin, end) on each, on the calling thread and its helpers
// (ptq/runtime/task_pool.h): the caller takes ranges from the front while a helper wakes up,
// helpers from the back. Each element is handled by the same code whatever the split, so results
// are identical for any thread count as long as fn treats elements independently.
template <typename F>
void parallel_for(int threads, int64_t n, F&& fn, int64_t min_per_thread = 1) {
  if (n <= 0) return;
  const int64_t t = std::max(threads, 1);
  const int64_t most = n / std::max<int64_t>(min_per_thread, 1);
  const int64_t ranges = std::min<int64_t>(t == 1 ? 1 : 4 * t, most);
  if (ranges <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  auto range = [&](int64_t id) {
    const int64_t begin = n * id / ranges, end = n * (id + 1) / ranges;
    if (begin < end) fn(begin, end);
  };
  run_tasks(static_cast<int>(t), ranges, range);
}

// Whether `tasks` of equal size would give some of `threads` threads more of them than others
// while there are fewer than four a thread: then a kernel cutting its work finer pays (the
// task pool hands tasks out one at a time, so four a thread even out).
inline bool uneven_shares(int64_t tasks, int threads) {
  const int64_t t = std::max(threads, 1);
  return tasks < 4 * t && tasks % t != 0;
}

// The sum over j < n of f(x[j]) in double as eight running sums (sum l takes j = l, l + 8, ...)
// added pairwise at the end: a fixed order whatever the thread count, with eight additions in
// flight where one running sum waited on each, so the loop vectorises (GlobalAveragePool,
// LayerNorm's mean and variance). f defaults to the value itself.
struct AsDouble {
  double operator()(double v) const { return v; }
};
template <typename T, typename F = AsDouble>
double sum_in_double(const T* x, int64_t n, F f = {}) {
  double s[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    for (int l = 0; l < 8; ++l) s[l] += f(static_cast<double>(x[j + l]));
  }
  for (int l = 0; j < n; ++j, ++l) s[l] += f(static_cast<double>(x[j]));
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// Calls fn(i) for every i in [0, n) on up to `threads` threads, handing out one index at a
// time: for tasks of uneven cost (edge tiles), where an even split leaves threads idle. As
// with parallel_for, results do not depend on which thread runs a task.
template <typename F>
void parallel_tasks(int threads, int64_t n, F&& fn) {
  if (n <= 0) return;
  auto task = [&](int64_t i) { fn(i); };
  run_tasks(threads, n, task);
}

}  // namespace ptq::runtime::cpu
