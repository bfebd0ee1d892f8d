// Subgraphs (If's branches, Loop's and Scan's bodies): the values they read from the graphs
// around them. ONNX lets a subgraph read any value of an enclosing graph by name; the executor
// and the graph's order treat those as further inputs of the node holding the subgraph (ONNX
// Runtime's "implicit inputs").
#pragma once

#include <string>
#include <vector>

#include "ptq/ir/graph.h"

namespace ptq::ir {

// Names `graph` (and the subgraphs inside it, at any depth) reads that it does not define as
// an input, initializer or node output: the values it takes from the graphs around it, in the
// order first read, each once.
std::vector<std::string> outer_scope_values(const Graph& graph);

// The same over every graph attribute of `node`, less the names `node` reads as its own
// inputs: empty for a node without subgraphs.
std::vector<std::string> outer_scope_values(const Node& node);

// Whether `node` holds a graph attribute that was parsed (Attribute::g or graphs).
bool has_subgraph(const Node& node);

}  // namespace ptq::ir
