// Every value's type and shape for one set of fed input shapes, read from the model's declared
// and inferred value types instead of running the model on the CPU.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "program.h"
#include "ptq/ir.h"
#include "ptq/runtime.h"

namespace ptq::vulkan {

struct ShapeFacts {
  std::unordered_map<std::string, ValueFacts> facts;   // every real input and node output
  std::unordered_map<std::string, ir::Tensor> folded;  // static values that are not initializers
};

// Values computable from the model's constants and input shapes alone (initializers, Shape
// and what follows from them); an error names a node whose output shape depends on values.
Expected<std::unordered_set<std::string>> static_values(const ir::Graph& graph);

// The facts the CPU shape pass would record, when the graph's value types settle them: the fed
// inputs match their declared types with each symbolic dim bound to one size, and every node
// output that is not static has a declared dtype and a shape whose dims are known or bound (or
// its node runs on `cpu` with stand-in inputs). Static values (from constants and shapes alone)
// are computed by running their nodes on `cpu`. nullopt, with the reason in `why`, when the types
// leave anything open; an error only when a static node fails to run.
Expected<std::optional<ShapeFacts>> declared_shape_facts(
    const ir::Graph& graph, int64_t opset, const runtime::NamedTensors& inputs,
    const std::unordered_set<std::string>& statics, runtime::Backend& cpu, std::string& why);

}  // namespace ptq::vulkan
