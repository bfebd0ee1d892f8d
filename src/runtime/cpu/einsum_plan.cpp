// Einsum as a batched GEMM, planned once per call: the labels of a two-operand equation fall
// into batch (both operands and the output), m (A and the output), n (B and the output) and k
// (both operands, summed); an operand whose axes are not in [batch, m, k] order (or its
// transpose) is to be copied into it, and so is C when the output's order differs. Anything else
// (a diagonal, a label summed in one operand only, a broadcast dim) is left to the reference
// loop. The plan is run by each instruction-set level's run_gemm (einsum_fast.cpp).
#include <algorithm>

#include "einsum.h"
#include "kernel_util.h"

namespace ptq::runtime::cpu::einsum {

namespace {

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

std::vector<int> concat(std::vector<int> a, const std::vector<int>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

int64_t extent_of(const Layout& l, const std::vector<int>& labels) {
  int64_t n = 1;
  for (int x : labels) n *= l.extent[static_cast<size_t>(x)];
  return n;
}

// Strides (in `axes`' element order) that read an operand with axes `axes` in `order`.
std::vector<int64_t> strides_for(const std::vector<int>& axes, const ir::Shape& shape,
                                 const std::vector<int>& order) {
  const std::vector<int64_t> own = strides_of(shape);
  std::vector<int64_t> s;
  for (int label : order) {
    s.push_back(
        own[static_cast<size_t>(std::find(axes.begin(), axes.end(), label) - axes.begin())]);
  }
  return s;
}

ir::Shape shape_for(const Layout& l, const std::vector<int>& order) {
  ir::Shape s;
  for (int label : order) s.push_back(l.extent[static_cast<size_t>(label)]);
  return s;
}

// How one operand is fed: as stored when its axes are `order` (trans false) or `alt` (true),
// else copied into `order`.
void place(const Layout& l, const std::vector<int>& axes, const ir::Shape& shape,
           const std::vector<int>& order, const std::vector<int>& alt, bool& trans,
           std::optional<std::vector<int64_t>>& permute, ir::Shape& permuted) {
  trans = axes != order && axes == alt;
  if (axes == order || axes == alt) return;
  permute = strides_for(axes, shape, order);
  permuted = shape_for(l, order);
}

}  // namespace

std::optional<GemmPlan> plan_gemm(const Layout& l, std::span<const ir::Shape> shapes) {
  if (shapes.size() != 2) return std::nullopt;
  const std::vector<int>& a = l.axes[0];
  const std::vector<int>& b = l.axes[1];
  for (size_t op = 0; op < 2; ++op) {
    const std::vector<int>& axes = l.axes[op];
    for (size_t d = 0; d < axes.size(); ++d) {
      if (std::count(axes.begin(), axes.end(), axes[d]) > 1) return std::nullopt;
      if (shapes[op][d] != l.extent[static_cast<size_t>(axes[d])]) return std::nullopt;
    }
  }
  std::vector<int> batch, m, n, k;
  for (int x : l.output) {
    if (has(a, x) && has(b, x)) batch.push_back(x);
    else if (has(a, x)) m.push_back(x);
    else n.push_back(x);
  }
  for (int x : l.summed) {
    if (!has(a, x) || !has(b, x)) return std::nullopt;
  }
  for (int x : a) {
    if (has(l.summed, x)) k.push_back(x);
  }
  GemmPlan p;
  p.batch = extent_of(l, batch), p.m = extent_of(l, m), p.n = extent_of(l, n);
  p.k = extent_of(l, k);
  place(l, a, shapes[0], concat(concat(batch, m), k), concat(concat(batch, k), m), p.trans_a,
        p.permute_a, p.permuted_a);
  place(l, b, shapes[1], concat(concat(batch, k), n), concat(concat(batch, n), k), p.trans_b,
        p.permute_b, p.permuted_b);
  const std::vector<int> c = concat(concat(batch, m), n);
  if (l.output != c) {
    // C is [batch, m, n]; the output reads it through C's strides permuted to its own order.
    const std::vector<int64_t> cs = strides_of(shape_for(l, c));
    std::vector<int64_t> s;
    for (int x : l.output) {
      s.push_back(cs[static_cast<size_t>(std::find(c.begin(), c.end(), x) - c.begin())]);
    }
    p.scatter_c = s;
  }
  return p;
}

}  // namespace ptq::runtime::cpu::einsum
