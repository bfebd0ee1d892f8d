#include "ptq/ir/builders.h"

#include <memory>
#include <utility>

namespace ptq::ir {

namespace {

Attribute named(std::string name, AttrType type) {
  Attribute a;
  a.name = std::move(name);
  a.type = type;
  return a;
}

}  // namespace

Attribute int_attr(std::string name, int64_t v) {
  Attribute a = named(std::move(name), AttrType::kInt);
  a.i = v;
  return a;
}

Attribute float_attr(std::string name, float v) {
  Attribute a = named(std::move(name), AttrType::kFloat);
  a.f = v;
  return a;
}

Attribute ints_attr(std::string name, std::vector<int64_t> v) {
  Attribute a = named(std::move(name), AttrType::kInts);
  a.ints = std::move(v);
  return a;
}

Attribute string_attr(std::string name, std::string v) {
  Attribute a = named(std::move(name), AttrType::kString);
  a.s = std::move(v);
  return a;
}

Attribute graph_attr(std::string name, Graph g) {
  Attribute a = named(std::move(name), AttrType::kGraph);
  a.g = std::make_shared<const Graph>(std::move(g));
  return a;
}

Node make_node(std::string op_type, std::string name, std::vector<std::string> inputs,
               std::vector<std::string> outputs) {
  Node n;
  n.op_type = std::move(op_type);
  n.name = std::move(name);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  return n;
}

}  // namespace ptq::ir
