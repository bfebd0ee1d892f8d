// Einsum (opset 12): any number of operands, repeated labels (diagonals), ellipses and sums, by
// a reference loop over output elements; float32 equations that are batched matrix products
// (attention's "bhid,bhjd->bhij", "bij,bjk->bik", "ij,jk->ik", with transposes) run as GEMMs
// (einsum_plan.cpp, and each instruction-set level's einsum_fast.cpp, whose make_einsum passes
// its level's GEMM to make_kernel).
#include "einsum.h"
#include "kernel_util.h"

namespace ptq::runtime::cpu {

namespace reference {

// out[o] = sum over the summed labels of the product of every operand's element, accumulated
// in double (int64 for integers). Parallel over output elements.
template <typename T>
void einsum(const einsum::Layout& l, const std::vector<const T*>& ops,
            const std::vector<std::vector<int64_t>>& strides, T* out, int threads) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;
  const size_t n_ops = ops.size();
  int64_t inner = 1;
  for (int label : l.summed) inner *= l.extent[static_cast<size_t>(label)];
  parallel_for(threads, ir::num_elements(l.output_shape), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> off(n_ops), idx(l.summed.size());
    for (int64_t o = begin; o < end; ++o) {
      std::fill(off.begin(), off.end(), 0);
      int64_t rem = o;
      for (size_t d = l.output.size(); d-- > 0;) {
        const auto label = static_cast<size_t>(l.output[d]);
        const int64_t i = rem % l.extent[label];
        rem /= l.extent[label];
        for (size_t p = 0; p < n_ops; ++p) off[p] += i * strides[p][label];
      }
      std::fill(idx.begin(), idx.end(), 0);
      Acc acc = 0;
      for (int64_t s = 0; s < inner; ++s) {
        Acc prod = 1;
        for (size_t p = 0; p < n_ops; ++p) prod *= static_cast<Acc>(ops[p][off[p]]);
        acc += prod;
        for (size_t d = l.summed.size(); d-- > 0;) {  // odometer over the summed labels
          const auto label = static_cast<size_t>(l.summed[d]);
          for (size_t p = 0; p < n_ops; ++p) off[p] += strides[p][label];
          if (++idx[d] < l.extent[label]) break;
          for (size_t p = 0; p < n_ops; ++p) off[p] -= idx[d] * strides[p][label];
          idx[d] = 0;
        }
      }
      out[o] = static_cast<T>(acc);
    }
  });
}

}  // namespace reference

namespace {

class EinsumKernel final : public Kernel {
 public:
  EinsumKernel(const KernelContext& ctx, einsum::Equation eq, einsum::GemmRunner run_gemm)
      : node_(ctx.node),
        eq_(std::move(eq)),
        run_gemm_(run_gemm),
        threads_(ctx.threads),
        reference_(ctx.reference) {}

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, in.size()));
    std::vector<ir::Shape> shapes;
    for (const ir::Tensor* t : in) {
      if (t->dtype() != in[0]->dtype()) {
        return node_error(node_, "inputs must share one element type ({} and {})",
                          ir::dtype_name(in[0]->dtype()), ir::dtype_name(t->dtype()));
      }
      shapes.push_back(t->shape());
    }
    PTQ_ASSIGN_OR_RETURN(einsum::Layout l, einsum::resolve(node_, eq_, shapes));
    const ir::DType dtype = in.empty() ? ir::DType::kFloat32 : in[0]->dtype();
    out[0] = alloc.allocate(dtype, l.output_shape);
    if (dtype == ir::DType::kFloat32 && !reference_) {
      if (auto plan = einsum::plan_gemm(l, shapes)) {
        run_gemm_(*plan, in[0]->data<float>(), in[1]->data<float>(), out[0].data<float>(),
                  l.output_shape, threads_);
        return Status::ok();
      }
    }
    std::vector<std::vector<int64_t>> strides;
    for (size_t p = 0; p < in.size(); ++p) {
      strides.push_back(einsum::label_strides(l, p, shapes[p]));
    }
    const bool done = dispatch_numeric(dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      std::vector<const T*> ops;
      for (const ir::Tensor* t : in) ops.push_back(t->data<T>());
      reference::einsum<T>(l, ops, strides, out[0].data<T>(), threads_);
    });
    if (!done) return unsupported_dtype(node_, dtype);
    return Status::ok();
  }

 private:
  const ir::Node& node_;
  einsum::Equation eq_;
  einsum::GemmRunner run_gemm_;
  int threads_;
  bool reference_;
};

}  // namespace

namespace einsum {

Expected<std::unique_ptr<Kernel>> make_kernel(const KernelContext& ctx, GemmRunner run_gemm) {
  const std::string text = ctx.node.attr_string("equation", "");
  PTQ_ASSIGN_OR_RETURN(einsum::Equation eq, einsum::parse(ctx.node, text));
  if (eq.terms.size() != ctx.node.inputs.size()) {
    return node_error(ctx.node, "equation '{}' has {} terms for {} inputs", text, eq.terms.size(),
                      ctx.node.inputs.size());
  }
  return std::unique_ptr<Kernel>(std::make_unique<EinsumKernel>(ctx, std::move(eq), run_gemm));
}

}  // namespace einsum

}  // namespace ptq::runtime::cpu
