// Lookup of Vulkan op factories by ONNX op type (the list is ops.inc).
#include <string_view>

#include "op.h"

namespace ptq::vulkan {

namespace {

struct Entry {
  std::string_view op;
  OpFactory factory;
};

constexpr Entry kOps[] = {
#define PTQ_VULKAN_OP(op, factory) {#op, &factory},
#include "ops.inc"
#undef PTQ_VULKAN_OP
};

}  // namespace

OpFactory find_op(std::string_view op_type) {
  for (const Entry& e : kOps) {
    if (e.op == op_type) return e.factory;
  }
  return nullptr;
}

}  // namespace ptq::vulkan
