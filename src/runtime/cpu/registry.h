// CPU kernel factories, declared from ops.inc and isa_ops.inc (the one place an op is
// registered).
#pragma once

#include <string_view>

#include "ptq/runtime.h"

namespace ptq::runtime::cpu {

#define PTQ_CPU_OP(op, factory) \
  Expected<std::unique_ptr<Kernel>> factory(const KernelContext& ctx);
#include "ops.inc"
#undef PTQ_CPU_OP

// The factory for a default-domain op type, or null; ops of isa_ops.inc come from `isa`'s
// level (kAuto: best_cpu_isa()).
KernelFactory find_factory(std::string_view op_type, CpuIsa isa = CpuIsa::kAuto);

}  // namespace ptq::runtime::cpu
