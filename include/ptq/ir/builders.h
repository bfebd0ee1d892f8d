// Constructors for the attributes and nodes that graph rewrites (and tests) add to a model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptq/ir/graph.h"

namespace ptq::ir {

Attribute int_attr(std::string name, int64_t v);
Attribute float_attr(std::string name, float v);
Attribute ints_attr(std::string name, std::vector<int64_t> v);
Attribute string_attr(std::string name, std::string v);
// A graph attribute (If's branches, Loop's and Scan's body); the writer serializes `g`.
Attribute graph_attr(std::string name, Graph g);

// A default-domain node without attributes.
Node make_node(std::string op_type, std::string name, std::vector<std::string> inputs,
               std::vector<std::string> outputs);

}  // namespace ptq::ir
