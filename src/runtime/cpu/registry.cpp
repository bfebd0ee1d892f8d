#include "registry.h"

#include <algorithm>
#include <array>
#include <utility>

namespace ptq::runtime::cpu {

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

}  // namespace

KernelFactory find_factory(std::string_view op_type) {
  for (const Entry& e : kOps) {
    if (e.factory != nullptr && e.op == op_type) return e.factory;
  }
  return nullptr;
}

}  // namespace ptq::runtime::cpu
