// Conv (opsets 1–22): N-D reference for float32/float64, fast float32 1-D/2-D kernels.
#include "isa_begin.h"  // first: this file is compiled once per instruction-set level
#include "conv.h"

#include <mutex>
#include <utility>
#include <vector>

#include "gemm_packed.h"
#include "registry.h"
#include "shared_packing.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

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
        reference_(ctx.reference),
        winograd_(ctx.winograd) {
    const ir::Tensor* w = constant_input(ctx, 1);
    // Float32 weights make X float32 (else the node fails); 1-D and 2-D convs run conv_fast.
    fusable_ = !reference_ && w != nullptr && w->dtype() == ir::DType::kFloat32 &&
               (w->rank() == 3 || w->rank() == 4);
    if (!reference_) prepare(w);
  }

  Status run(Inputs in, Outputs out, Allocator& alloc) override {
    PTQ_ASSIGN_OR_RETURN(ConvParams p, params(in));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& w = *in[1];
    const ir::Tensor* b = input_or_null(in, 2);
    out[0] = alloc.allocate(x.dtype(), output_shape(p));
    if (x.dtype() == ir::DType::kFloat32) {
      const float* bias = b != nullptr ? b->data<float>() : nullptr;
      float* y = out[0].data<float>();
      if (reference_ || !compute(p, x.data<float>(), w, bias, y, ConvEpilogue{})) {
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

  bool fuses(bool /*residual*/, Activation /*activation*/) const override { return fusable_; }

  // The fast kernel with the epilogue in its output tiles, for float32 1-D/2-D convs and a
  // residual of the output's shape; other calls are declined before anything is allocated.
  Expected<bool> run_fused(Inputs in, Outputs out, Allocator& alloc, const Epilogue& e) override {
    PTQ_ASSIGN_OR_RETURN(ConvParams p, params(in));
    const ir::Tensor& x = *in[0];
    const ir::Tensor& w = *in[1];
    const ir::Tensor* b = input_or_null(in, 2);
    const ir::Shape shape = output_shape(p);
    const ir::Tensor* r = e.residual;
    if (reference_ || x.dtype() != ir::DType::kFloat32 || !conv_fast_handles(p) ||
        (r != nullptr && (r->dtype() != ir::DType::kFloat32 || r->shape() != shape))) {
      return false;
    }
    out[0] = alloc.allocate(x.dtype(), shape);
    const ConvEpilogue ce{r != nullptr ? r->data<float>() : nullptr, e.activation, e.lo, e.hi};
    return compute(p, x.data<float>(), w, b != nullptr ? b->data<float>() : nullptr,
                   out[0].data<float>(), ce);
  }

 private:
  // Checks the inputs and resolves the geometry of this call.
  Expected<ConvParams> params(Inputs in) const {
    PTQ_RETURN_IF_ERROR(require_inputs(node_, in, 2));
    const ir::Tensor* b = input_or_null(in, 2);
    if (in[1]->dtype() != in[0]->dtype() || (b != nullptr && b->dtype() != in[0]->dtype())) {
      return node_error(node_, "X, W and B must share one element type");
    }
    return conv_params(node_, *in[0], *in[1], b, group_);
  }

  static ir::Shape output_shape(const ConvParams& p) {
    ir::Shape shape{p.N, p.M};
    shape.insert(shape.end(), p.out.begin(), p.out.end());
    return shape;
  }

  // The fast float32 kernel choose_conv gives this call, each packed form of the weights
  // made when a call first needs it. False where none handles the shape.
  bool compute(const ConvParams& p, const float* x, const ir::Tensor& w, const float* b,
               float* y, const ConvEpilogue& e) {
    const ConvAlgo algo = choose_conv(p, ConvSetting{threads_, winograd_, owns(w)});
    if (algo == ConvAlgo::kWinograd) {
      std::call_once(winograd_once_, [&] { winograd_packed_ = pack_winograd(); });
      return conv_winograd(p, x, winograd_packed_.get(), b, y, e, threads_);
    }
    if (algo == ConvAlgo::kLanes) {
      std::call_once(lanes_once_, [&] { lanes_packed_ = pack_lanes(); });
      return conv_lanes(p, x, lanes_packed_.get(), b, y, e, threads_);
    }
    return conv_with(algo, p, x, w.data<float>(), packed(w), b, y, e, threads_);
  }

  // Whether `w` is the initializer this kernel packs. The executor passes a view of it: same
  // bytes, another Tensor object.
  bool owns(const ir::Tensor& w) const { return weights_ != nullptr && w.raw() == weights_->raw(); }

  // The GEMM packing of the weights when `w` is their initializer, else null.
  const float* packed(const ir::Tensor& w) {
    if (!owns(w)) return nullptr;
    std::call_once(packed_once_, [&] { packed_ = pack_gemm(); });
    return packed_.get();
  }

  // Constant float weights of a 1-D/2-D conv that runs as a GEMM (not depthwise) are packed
  // for the GEMM micro-kernel when the conv is prepared, unless some call may take another
  // form (conv_weight_forms): then each form is packed at the first call that takes it.
  void prepare(const ir::Tensor* w) {
    if (w == nullptr || w->dtype() != ir::DType::kFloat32 || (w->rank() != 3 && w->rank() != 4) ||
        w->dim(1) <= 1 || group_ <= 0 || w->dim(0) % group_ != 0) {
      return;
    }
    std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
    Expected<Window> window = read_window(node_, std::move(kernel));
    if (!window) return;  // every call fails
    weights_ = w;
    ConvParams p;
    p.C = w->dim(1) * group_, p.M = w->dim(0), p.G = group_;
    p.w = std::move(*window);
    p.in.assign(p.w.rank(), 0);
    p.out = p.in;
    const ConvForms forms = conv_weight_forms(p, winograd_);
    if (!forms.winograd && !forms.lanes) packed(*w);
  }

  // Packings are shared with every kernel packing the same weights the same way.
  PackedWeights pack_gemm() const {
    const ir::Tensor& w = *weights_;
    const int64_t m = w.dim(0), k = w.size() / m;
    return shared_packing(w.raw(), {0, m, k, group_},
                          static_cast<size_t>(group_ * packed_a_floats(m / group_, k)),
                          [&](float* out) {
                            pack_conv_weights(w.data<float>(), m, group_, k, out);
                          });
  }

  PackedWeights pack_winograd() const {
    const ir::Tensor& w = *weights_;
    const int64_t m = w.dim(0), c = w.dim(1);
    return shared_packing(w.raw(), {1, m, c, 9},
                          static_cast<size_t>(winograd_weight_floats(m, c)),
                          [&](float* out) { pack_winograd_weights(w.data<float>(), m, c, out); });
  }

  PackedWeights pack_lanes() const {
    const ir::Tensor& w = *weights_;
    const int64_t m = w.dim(0), k = w.size() / m;
    return shared_packing(w.raw(), {2, m, k, 1}, static_cast<size_t>(lanes_weight_floats(m, k)),
                          [&](float* out) { pack_lanes_weights(w.data<float>(), m, k, out); });
  }

  const ir::Node& node_;
  int64_t group_;
  int threads_;
  bool reference_;
  bool winograd_;  // Winograd allowed (CpuBackendOptions::winograd)
  bool fusable_ = false;
  const ir::Tensor* weights_ = nullptr;  // the constant weights this kernel packs
  std::once_flag packed_once_, winograd_once_, lanes_once_;
  PackedWeights packed_, winograd_packed_, lanes_packed_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_conv(const KernelContext& ctx) {
  return std::unique_ptr<Kernel>(std::make_unique<ConvKernel>(ctx));
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS

#include "isa_end.h"
