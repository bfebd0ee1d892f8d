// Conv (opsets 1–22): N-D reference for float32/float64, fast float32 1-D/2-D kernels.
#include "conv.h"

#include "gemm_packed.h"
#include "registry.h"

namespace ptq::runtime::cpu {

namespace {

// Checks shapes and resolves the geometry of one Conv call.
Expected<ConvParams> conv_params(const ir::Node& node, const ir::Tensor& x, const ir::Tensor& w,
                                 const ir::Tensor* b, int64_t group) {
  if (x.rank() < 3 || w.rank() != x.rank()) {
    return node_error(node, "X {} and W {} must have the same rank >= 3", ir::shape_str(x.shape()),
                      ir::shape_str(w.shape()));
  }
  ConvParams p;
  p.N = x.dim(0), p.C = x.dim(1), p.M = w.dim(0), p.G = group;
  if (group <= 0 || p.M % group != 0 || w.dim(1) * group != p.C) {
    return node_error(node, "X {} with group {} does not fit W {}", ir::shape_str(x.shape()), group,
                      ir::shape_str(w.shape()));
  }
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != p.M)) {
    return node_error(node, "bias {} must be [{}]", ir::shape_str(b->shape()), p.M);
  }
  std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  std::vector<int64_t> declared = node.attr_ints("kernel_shape", kernel);
  if (declared != kernel) {
    return node_error(node, "kernel_shape {} does not match W {}", ir::shape_str(declared),
                      ir::shape_str(w.shape()));
  }
  PTQ_ASSIGN_OR_RETURN(p.w, read_window(node, kernel));
  p.in.assign(x.shape().begin() + 2, x.shape().end());
  PTQ_ASSIGN_OR_RETURN(p.out, forward_output_dims(node, p.w, p.in));
  return p;
}

class ConvKernel final : public Kernel {
 public:
  ConvKernel(const KernelContext& ctx)
      : node_(ctx.node),
        group_(ctx.node.attr_int("group", 1)),
        threads_(ctx.threads),
        reference_(ctx.reference) {
    if (!reference_) pack(constant_input(ctx, 1));
  }

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 2));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& w = *in[1];
    const ir::Tensor* b = input_or_null(in, 2);
    if (w.dtype() != x.dtype() || (b != nullptr && b->dtype() != x.dtype())) {
      return node_error(node_, "X, W and B must share one element type");
    }
    PTQ_ASSIGN_OR_RETURN(ConvParams p, conv_params(node_, x, w, b, group_));
    ir::Shape shape{p.N, p.M};
    shape.insert(shape.end(), p.out.begin(), p.out.end());
    out[0] = alloc.allocate(x.dtype(), shape);
    if (x.dtype() == ir::DType::kFloat32) {
      const float* bias = b != nullptr ? b->data<float>() : nullptr;
      float* y = out[0].data<float>();
      // The executor passes a view of the initializer: same bytes, another Tensor object.
      const bool prepacked = weights_ != nullptr && w.raw() == weights_->raw();
      const float* packed = prepacked ? packed_.data() : nullptr;
      if (reference_ ||
          !conv_fast(p, x.data<float>(), w.data<float>(), packed, bias, y, Clamp{}, threads_)) {
        reference::conv<float>(p, x.data<float>(), w.data<float>(), bias, y);
      }
      return Status::ok();
    }
    if (x.dtype() == ir::DType::kFloat64) {
      reference::conv<double>(p, x.data<double>(), w.data<double>(),
                              b != nullptr ? b->data<double>() : nullptr, out[0].data<double>());
      return Status::ok();
    }
    return unsupported_dtype(node_, x.dtype());
  }

 private:
  // Constant float weights of a 1-D/2-D conv that runs as a GEMM (not depthwise) are packed
  // once for the GEMM micro-kernel; the executor hands the same initializer to every run.
  void pack(const ir::Tensor* w) {
    if (w == nullptr || w->dtype() != ir::DType::kFloat32 || (w->rank() != 3 && w->rank() != 4) ||
        w->dim(1) <= 1 || group_ <= 0 || w->dim(0) % group_ != 0) {
      return;
    }
    const int64_t k = w->size() / w->dim(0);
    packed_.resize(static_cast<size_t>(group_ * packed_a_floats(w->dim(0) / group_, k)));
    pack_conv_weights(w->data<float>(), w->dim(0), group_, k, packed_.data());
    weights_ = w;
  }

  const ir::Node& node_;
  int64_t group_;
  int threads_;
  bool reference_;
  const ir::Tensor* weights_ = nullptr;  // the initializer packed_ was made from
  std::vector<float> packed_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_conv(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<ConvKernel>(ctx));
}

}  // namespace ptq::runtime::cpu
