// Internal to ptq_sensitivity: variants made from models the sweep has made already instead
// of quantizing the float model again for each unit.
// - all-but: leaving unit k in float removes the Q/DQ of k's edges and nothing else, when the
//   plans say so: every edge the variant's plan keeps is the base plan's (same node, slot,
//   tensor, role, axis and scale) and no BatchNormalization is folded. The variant is then the
//   base (fully quantized, folded) with each dropped edge's node reading the edge's float
//   tensor again.
// - only: quantizing unit k alone adds the Q/DQ of k's edges, each as the fully quantized
//   model has it, when every edge of the variant's plan is that model's plan's (as above) and
//   no weight or bias among them is read by another unit's edge there. The variant is then the
//   float base with k's nodes reading the fully quantized model's (folded) values: its
//   activations' Q -> DQ nodes and its dequantized weights and biases.
// Either is what apply() on the variant's plan, then folding, computes. Where the plans differ
// otherwise, the sweep quantizes the float model as for any variant.
#pragma once

#include <optional>
#include <vector>

#include "ptq/ir.h"
#include "ptq/planner.h"

namespace ptq::sensitivity {

// The edges of `base` that `variant` drops, when that is the only difference between the two
// plans (see above) and no dropped weight or bias is read by a kept edge; nullopt otherwise.
std::optional<std::vector<const planner::QuantEdge*>> dropped_edges(const planner::Plan& base,
                                                                    const planner::Plan& variant);

// A copy of `base` (the planned model `source`, quantized by the base plan and folded; its
// initializers borrowed, its declarations left out) whose nodes read each dropped edge's float
// tensor again; a weight or bias the base
// no longer holds is borrowed from `source`. Nullopt when a node or value is not found where
// the plan says.
std::optional<ir::Model> rewired_base(const ir::Model& base, const ir::GraphIndex& base_index,
                                      const ir::Model& source,
                                      const std::vector<const planner::QuantEdge*>& dropped);

// The edges of `quantized` (the fully quantized model's plan) that `variant` has, when every
// edge of `variant` is one of them (see above) and no weight or bias among them is read by an
// edge of `quantized` that `variant` lacks; nullopt otherwise.
std::optional<std::vector<const planner::QuantEdge*>> added_edges(const planner::Plan& quantized,
                                                                  const planner::Plan& variant);

// A copy of `base` (the planned model `source`, folded; as above) whose nodes read, at each
// added edge, the value `quantized` (`source` quantized by the full plan, folded) reads there:
// a dequantized weight or bias (borrowed), or an activation's Q -> DQ output, whose two nodes
// and scale initializers are copied in before their first reader. Nullopt when a node or
// value is not found where the plan says.
std::optional<ir::Model> with_quantized_edges(const ir::Model& base, const ir::GraphIndex& base_index,
                                              const ir::Model& quantized,
                                              const ir::GraphIndex& quantized_index,
                                              const ir::Model& source,
                                              const std::vector<const planner::QuantEdge*>& added);

}  // namespace ptq::sensitivity
