// Nodes built in code for tests: ir/builders.h's attribute constructors under the tests' short
// names, a fluent builder, and the two shapes of node the tests make most.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ptq/ir.h"
#include "ptq/ir/builders.h"

namespace ptq::testing {

inline ir::Attribute attr_int(std::string name, int64_t v) {
  return ir::int_attr(std::move(name), v);
}
inline ir::Attribute attr_float(std::string name, float v) {
  return ir::float_attr(std::move(name), v);
}
inline ir::Attribute attr_ints(std::string name, std::vector<int64_t> v) {
  return ir::ints_attr(std::move(name), std::move(v));
}
inline ir::Attribute attr_string(std::string name, std::string v) {
  return ir::string_attr(std::move(name), std::move(v));
}
inline ir::Attribute attr_tensor(std::string name, ir::Tensor v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttrType::kTensor;
  a.t = std::move(v);
  return a;
}

// A node under construction, named after its op: `op("Slice").ints("axes", {0}).build(3)`.
class NodeBuilder {
 public:
  explicit NodeBuilder(std::string op_type) {
    node_.name = op_type;
    node_.op_type = std::move(op_type);
  }
  NodeBuilder& named(std::string name) {
    node_.name = std::move(name);
    return *this;
  }
  NodeBuilder& attr(ir::Attribute a) {
    node_.set_attr(std::move(a));
    return *this;
  }
  NodeBuilder& i(std::string name, int64_t v) { return attr(attr_int(std::move(name), v)); }
  NodeBuilder& f(std::string name, float v) { return attr(attr_float(std::move(name), v)); }
  NodeBuilder& s(std::string name, std::string v) {
    return attr(attr_string(std::move(name), std::move(v)));
  }
  NodeBuilder& ints(std::string name, std::vector<int64_t> v) {
    return attr(attr_ints(std::move(name), std::move(v)));
  }
  NodeBuilder& t(std::string name, ir::Tensor v) {
    return attr(attr_tensor(std::move(name), std::move(v)));
  }
  // Inputs named i0..i{n-1}, outputs o0..o{m-1}: a kernel called directly reads them by place.
  ir::Node build(size_t inputs, size_t outputs = 1) const {
    ir::Node n = node_;
    // fmt, not "i" + std::to_string(k): GCC 12 warns falsely (-Wrestrict) on the latter.
    for (size_t k = 0; k < inputs; ++k) n.inputs.push_back(fmt::format("i{}", k));
    for (size_t k = 0; k < outputs; ++k) n.outputs.push_back(fmt::format("o{}", k));
    return n;
  }

 private:
  ir::Node node_;
};

inline NodeBuilder op(std::string op_type) { return NodeBuilder(std::move(op_type)); }

// A node named "n" with `inputs` and `outputs` placeholders (NodeBuilder::build) and `attrs`.
inline ir::Node make_node(std::string op_type, size_t inputs, size_t outputs,
                          std::vector<ir::Attribute> attrs = {}) {
  ir::Node n = NodeBuilder(std::move(op_type)).named("n").build(inputs, outputs);
  n.attributes = std::move(attrs);
  return n;
}

// A node of a graph built in code, named <op>_<first output>.
inline ir::Node op_node(std::string op_type, std::vector<std::string> in,
                        std::vector<std::string> out, std::vector<ir::Attribute> attrs = {}) {
  std::string name = op_type + "_" + out.at(0);
  ir::Node n = ir::make_node(std::move(op_type), std::move(name), std::move(in), std::move(out));
  n.attributes = std::move(attrs);
  return n;
}

// A node named <first output>_node.
inline ir::Node output_node(std::string op_type, std::vector<std::string> in,
                            std::vector<std::string> out, std::vector<ir::Attribute> attrs = {}) {
  std::string name = out.at(0) + "_node";
  ir::Node n = ir::make_node(std::move(op_type), std::move(name), std::move(in), std::move(out));
  n.attributes = std::move(attrs);
  return n;
}

}  // namespace ptq::testing
