#include "ptq/ir/constant_attr.h"

#include <span>

namespace ptq::ir {

namespace {

int64_t length(size_t n) { return static_cast<int64_t>(n); }

Tensor strings_tensor(Shape shape, std::vector<std::string> values) {
  Tensor t(DType::kString, std::move(shape));
  t.strings() = std::move(values);
  return t;
}

}  // namespace

std::optional<Tensor> constant_attr_value(const Node& node) {
  if (const Attribute* a = node.attr("value_float")) return make_tensor<float>({}, {a->f});
  if (const Attribute* a = node.attr("value_int")) return make_tensor<int64_t>({}, {a->i});
  if (const Attribute* a = node.attr("value_floats")) {
    return make_tensor<float>({length(a->floats.size())}, std::span<const float>(a->floats));
  }
  if (const Attribute* a = node.attr("value_ints")) {
    return make_tensor<int64_t>({length(a->ints.size())}, std::span<const int64_t>(a->ints));
  }
  if (const Attribute* a = node.attr("value_string")) return strings_tensor({}, {a->s});
  if (const Attribute* a = node.attr("value_strings")) {
    return strings_tensor({length(a->strings.size())}, a->strings);
  }
  return std::nullopt;
}

std::optional<Tensor> constant_node_value(const Node& node) {
  if (const Attribute* a = node.attr("value"); a != nullptr && a->type == AttrType::kTensor) {
    return a->t.view();
  }
  return constant_attr_value(node);
}

}  // namespace ptq::ir
