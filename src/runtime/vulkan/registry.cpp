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

int64_t dims_product(const ir::Shape& s, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i) p *= s[static_cast<size_t>(i)];
  return p;
}

std::vector<int64_t> constant_ints(const ir::Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.size()));
  for (int64_t i = 0; i < t.size(); ++i) out[static_cast<size_t>(i)] = t.as_int64(i);
  return out;
}

}  // namespace ptq::vulkan
