#include "registry.h"

#include <algorithm>
#include <array>
#include <utility>

namespace ptq::runtime::cpu {

// Each level's factories for the ops of isa_ops.inc, defined in its copy of the kernel files.
#define PTQ_CPU_OP(op, factory) \
  Expected<std::unique_ptr<Kernel>> factory(const KernelContext& ctx);
namespace baseline {
#include "isa_ops.inc"
}  // namespace baseline
#if defined(PTQ_ISA_LEVELS_ALL)
namespace avx2 {
#include "isa_ops.inc"
}  // namespace avx2
namespace avx512 {
#include "isa_ops.inc"
}  // namespace avx512
#endif
#undef PTQ_CPU_OP

namespace {

struct Entry {
  std::string_view op;
  KernelFactory factory;
};

constexpr Entry kOps[] = {
#define PTQ_CPU_OP(op, factory) {#op, &factory},
#include "ops.inc"
#undef PTQ_CPU_OP
    {"", nullptr},  // keeps the array non-empty while ops are being added
};

// One table per level, lowest first (CpuIsa's order after kAuto).
#define PTQ_CPU_OP(op, factory) {#op, &LEVEL::factory},
#define LEVEL baseline
constexpr Entry kBaselineOps[] = {
#include "isa_ops.inc"
};
#undef LEVEL
#if defined(PTQ_ISA_LEVELS_ALL)
#define LEVEL avx2
constexpr Entry kAvx2Ops[] = {
#include "isa_ops.inc"
};
#undef LEVEL
#define LEVEL avx512
constexpr Entry kAvx512Ops[] = {
#include "isa_ops.inc"
};
#undef LEVEL
#else
constexpr const Entry* kAvx2Ops = kBaselineOps;  // best_cpu_isa() never names these levels
constexpr const Entry* kAvx512Ops = kBaselineOps;
#endif
#undef PTQ_CPU_OP

constexpr size_t kIsaOps = std::size(kBaselineOps);

const Entry* level_ops(CpuIsa isa) {
  switch (isa == CpuIsa::kAuto ? best_cpu_isa() : isa) {
    case CpuIsa::kAvx512: return kAvx512Ops;
    case CpuIsa::kAvx2: return kAvx2Ops;
    default: return kBaselineOps;
  }
}

}  // namespace

KernelFactory find_factory(std::string_view op_type, CpuIsa isa) {
  const Entry* level = level_ops(isa);
  for (size_t i = 0; i < kIsaOps; ++i) {
    if (level[i].op == op_type) return level[i].factory;
  }
  for (const Entry& e : kOps) {
    if (e.factory != nullptr && e.op == op_type) return e.factory;
  }
  return nullptr;
}

}  // namespace ptq::runtime::cpu
