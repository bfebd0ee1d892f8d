// Unique (opset 11): the distinct elements of the flattened input, or the distinct slices along
// `axis`, sorted ascending (lexicographically for slices) or in order of first occurrence, with
// each one's first index, every input element's (slice's) position in the result, and counts.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "kernel_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// The input seen as `count` slices of `inner` elements, `outer` times over (the axis between).
struct Slices {
  int64_t outer = 1, count = 1, inner = 1;
};

// A strict weak order for any element type: NaNs after every number and equal to each other
// (a NaN compared with < would break the sort's ordering).
template <typename T>
bool before(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

template <typename T>
struct SliceOrder {
  const T* x;
  Slices s;
  // Slice a before b, comparing element by element over every outer block.
  int compare(int64_t a, int64_t b) const {
    for (int64_t o = 0; o < s.outer; ++o) {
      const T* pa = x + (o * s.count + a) * s.inner;
      const T* pb = x + (o * s.count + b) * s.inner;
      for (int64_t i = 0; i < s.inner; ++i) {
        if (before(pa[i], pb[i])) return -1;
        if (before(pb[i], pa[i])) return 1;
      }
    }
    return 0;
  }
};

struct UniqueResult {
  std::vector<int64_t> first;    // per unique slice: its first index in the input
  std::vector<int64_t> inverse;  // per input slice: its unique slice
  std::vector<int64_t> counts;
};

template <typename T>
UniqueResult find_unique(const T* x, Slices s, bool sorted) {
  const SliceOrder<T> order{x, s};
  std::vector<int64_t> idx(static_cast<size_t>(s.count));
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return order.compare(a, b) < 0; });
  // Groups of equal slices in sorted order; each group's first member is its first occurrence.
  std::vector<int64_t> group_of(static_cast<size_t>(s.count));
  std::vector<int64_t> heads;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (k == 0 || order.compare(idx[k - 1], idx[k]) != 0) heads.push_back(idx[k]);
    group_of[static_cast<size_t>(idx[k])] = static_cast<int64_t>(heads.size()) - 1;
  }
  std::vector<int64_t> rank(heads.size());  // group -> output position
  std::iota(rank.begin(), rank.end(), 0);
  if (!sorted) {
    std::vector<int64_t> by_first(heads.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) {
      return heads[static_cast<size_t>(a)] < heads[static_cast<size_t>(b)];
    });
    for (size_t p = 0; p < by_first.size(); ++p) {
      rank[static_cast<size_t>(by_first[p])] = static_cast<int64_t>(p);
    }
  }
  UniqueResult r{std::vector<int64_t>(heads.size()), {}, std::vector<int64_t>(heads.size(), 0)};
  for (size_t g = 0; g < heads.size(); ++g) r.first[static_cast<size_t>(rank[g])] = heads[g];
  for (int64_t i = 0; i < s.count; ++i) {
    const int64_t p = rank[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
    r.inverse.push_back(p);
    ++r.counts[static_cast<size_t>(p)];
  }
  return r;
}

ir::Tensor int64_vector(Allocator& alloc, const std::vector<int64_t>& v) {
  ir::Tensor t = alloc.allocate(ir::DType::kInt64, {static_cast<int64_t>(v.size())});
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(int64_t));
  return t;
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_unique_op(const KernelContext& ctx) {
  const bool has_axis = ctx.node.has_attr("axis");
  const int64_t axis_attr = ctx.node.attr_int("axis", 0);
  const bool sorted = ctx.node.attr_int("sorted", 1) != 0;
  auto run = [node = ctx.node, has_axis, axis_attr, sorted](Inputs in, Outputs out,
                                                            Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, 1));
    const ir::Tensor& x = *in[0];
    Slices s{1, x.size(), 1};
    ir::Shape y_shape = {0};
    size_t y_axis = 0;
    if (has_axis) {
      PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, x.rank()));
      y_axis = static_cast<size_t>(axis);
      s = {dims_product(x.shape(), 0, y_axis), x.dim(axis),
           dims_product(x.shape(), y_axis + 1, x.shape().size())};
      y_shape = x.shape();
    }
    UniqueResult r;
    const bool ok = dispatch_all(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      r = find_unique(x.data<T>(), s, sorted);
      y_shape[y_axis] = static_cast<int64_t>(r.first.size());
      out[0] = alloc.allocate(x.dtype(), y_shape);
      T* y = out[0].data<T>();
      const int64_t n = y_shape[y_axis];
      for (int64_t o = 0; o < s.outer; ++o) {
        for (int64_t k = 0; k < n; ++k) {
          const T* from = x.data<T>() + (o * s.count + r.first[static_cast<size_t>(k)]) * s.inner;
          std::copy(from, from + s.inner, y + (o * n + k) * s.inner);
        }
      }
    });
    if (!ok) return unsupported_dtype(node, x.dtype());
    if (out.size() > 1) out[1] = int64_vector(alloc, r.first);
    if (out.size() > 2) out[2] = int64_vector(alloc, r.inverse);
    if (out.size() > 3) out[3] = int64_vector(alloc, r.counts);
    return Status::ok();
  };
  return make_kernel(run);
}

}  // namespace ptq::runtime::cpu
