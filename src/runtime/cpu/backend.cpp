// The CPU backend: kernels from the registry (ops.inc, isa_ops.inc at the options' instruction-set
// level), statistics computed in place.
#include <memory>

#include "ptq/runtime.h"
#include "registry.h"
#include "tensor_statistics.h"

namespace ptq::runtime {

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(CpuBackendOptions options)
      : options_(options), isa_(resolve_cpu_isa(options.isa)) {}

  std::string name() const override { return "cpu"; }

  bool supports(const ir::Node& node, int64_t /*opset*/) const override {
    return node.in_default_domain() && cpu::find_factory(node.op_type, level()) != nullptr;
  }

  Expected<std::unique_ptr<Kernel>> create_kernel(const KernelContext& ctx) override {
    if (!isa_.has_value()) return isa_.status();
    KernelFactory factory = cpu::find_factory(ctx.node.op_type, level());
    if (!ctx.node.in_default_domain() || factory == nullptr) {
      return invalid_input("{}: the cpu backend has no kernel for this op", ctx.node.label());
    }
    KernelContext local{ctx.node, ctx.opset, ctx.threads, ctx.graph,
                        ctx.reference || options_.reference, ctx.winograd && options_.winograd,
                        this};
    return factory(local);
  }

  std::unique_ptr<TensorStatistics> statistics(const ir::Tensor& tensor,
                                               int threads) const override {
    return std::make_unique<cpu::HostTensorStatistics>(tensor, threads);
  }

 private:
  // The level whose kernels run (the lowest where the one asked for is refused: supports()
  // answers alike for every level, and create_kernel reports the refusal).
  CpuIsa level() const { return isa_.has_value() ? *isa_ : CpuIsa::kBaseline; }

  CpuBackendOptions options_;
  Expected<CpuIsa> isa_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(CpuBackendOptions options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace ptq::runtime
