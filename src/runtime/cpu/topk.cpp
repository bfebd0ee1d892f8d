// TopK: the k largest (or smallest) elements along an axis with their indices. Ties keep the
// smaller index first, as ONNX specifies; results are always sorted (sorted=0 allows any order).
#include <algorithm>
#include <numeric>

#include "elementwise_util.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

template <typename T>
void topk_typed(const ir::Tensor& x, int64_t axis, int64_t k, bool largest, ir::Tensor& values,
                ir::Tensor& indices, int threads) {
  const ir::Shape& s = x.shape();
  const auto a = static_cast<size_t>(axis);
  const int64_t outer = dims_product(s, 0, a);
  const int64_t inner = dims_product(s, a + 1, s.size());
  const int64_t n = s[a];
  const T* src = x.data<T>();
  T* vout = values.data<T>();
  int64_t* iout = indices.data<int64_t>();
  // Strict weak order: better value first, then smaller index.
  auto before = [largest](const std::pair<T, int64_t>& p, const std::pair<T, int64_t>& q) {
    if (p.first != q.first) return largest ? p.first > q.first : p.first < q.first;
    return p.second < q.second;
  };
  parallel_for(threads, outer * inner, [&](int64_t b, int64_t e) {
    std::vector<std::pair<T, int64_t>> row(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      const int64_t o = r / inner;
      const int64_t i = r % inner;
      const T* p = src + o * n * inner + i;
      for (int64_t j = 0; j < n; ++j) row[static_cast<size_t>(j)] = {p[j * inner], j};
      std::partial_sort(row.begin(), row.begin() + k, row.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = o * k * inner + j * inner + i;
        vout[at] = row[static_cast<size_t>(j)].first;
        iout[at] = row[static_cast<size_t>(j)].second;
      }
    }
  }, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)));
}

}  // namespace

// K is the 'k' attribute before opset 10 and input 1 from 10 on; largest/sorted from 11.
Expected<std::unique_ptr<Kernel>> make_topk(const KernelContext& ctx) {
  const int64_t axis_attr = ctx.node.attr_int("axis", -1);
  const bool largest = ctx.node.attr_int("largest", 1) != 0;
  const bool k_input = ctx.opset >= 10;
  const int64_t k_attr = ctx.node.attr_int("k", -1);
  auto run = [node = ctx.node, threads = ctx.threads, axis_attr, largest, k_input, k_attr](
                 Inputs in, Outputs out, Allocator& alloc) -> Status {
    PTQ_RETURN_IF_ERROR(require_inputs(node, in, k_input ? 2 : 1));
    const ir::Tensor& x = *in[0];
    PTQ_ASSIGN_OR_RETURN(const int64_t axis, normalize_axis(node, axis_attr, x.rank()));
    int64_t k = k_attr;
    if (k_input) {
      if (in[1]->size() != 1) return node_error(node, "K must hold one value");
      k = in[1]->as_int64(0);
    }
    if (k < 0 || k > x.dim(axis)) {
      return node_error(node, "K = {} is out of range for axis {} of size {}", k, axis,
                        x.dim(axis));
    }
    ir::Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = k;
    out[0] = alloc.allocate(x.dtype(), shape);
    if (out.size() > 1) out[1] = alloc.allocate(ir::DType::kInt64, shape);
    ir::Tensor scratch;
    ir::Tensor& idx = out.size() > 1 ? out[1] : (scratch = ir::Tensor(ir::DType::kInt64, shape));
    if (out[0].size() == 0) return Status::ok();
    const bool ok = dispatch_numeric(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      topk_typed<T>(x, axis, k, largest, out[0], idx, threads);
    });
    return ok ? Status::ok() : unsupported_dtype(node, x.dtype());
  };
  return make_widening_kernel(run, ctx.threads);
}

}  // namespace ptq::runtime::cpu
