// Output types of common ops from their inputs' types, for the nodes whose declared output
// types ONNX shape inference left open. Without a rule such a node runs on the CPU on stand-in
// inputs of full size: in an exported transformer that is every node after the first
// Shape-computed Reshape, a whole forward pass on one thread before the GPU starts.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "program.h"
#include "ptq/ir.h"

namespace ptq::vulkan {

// One input of a node: its type, and its value when static (else nullptr).
struct InputType {
  const ValueFacts* fact = nullptr;  // nullptr for an omitted optional input
  const ir::Tensor* value = nullptr;
};

// The dtype and shape of each of `node`'s outputs (one entry per output slot, an omitted
// output's left empty) by the op's rule, or nullopt when no rule covers the op, an output or
// these inputs (the caller then runs the node's kernel). A rule checks what decides the shape
// (broadcastable dims, MatMul's inner dims, a permutation); anything else wrong with the inputs
// is reported by the op's kernel when the program runs.
std::optional<std::vector<ValueFacts>> rule_output_types(const ir::Node& node, int64_t opset,
                                                         std::span<const InputType> inputs);

}  // namespace ptq::vulkan
