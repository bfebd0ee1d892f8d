// Internal to ptq_sensitivity: an all-but variant made from the fully quantized base instead
// of quantizing the float model again. Leaving unit k in float removes the Q/DQ of k's edges
// and nothing else, when the plans say so: every edge the variant's plan keeps is the base
// plan's (same node, slot, tensor, role, axis and scale) and no BatchNormalization is folded.
// The variant is then the base with each dropped edge's node reading the edge's float tensor
// again, which is what apply() on the variant's plan, then folding, computes. Where the plans
// differ otherwise, the sweep quantizes the float model as for any variant.
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

// A borrowing copy of `base` (the planned model `source`, quantized by the base plan and
// folded) whose nodes read each dropped edge's float tensor again; a weight or bias the base
// no longer holds is borrowed from `source`. Nullopt when a node or value is not found where
// the plan says.
std::optional<ir::Model> rewired_base(const ir::Model& base, const ir::GraphIndex& base_index,
                                      const ir::Model& source,
                                      const std::vector<const planner::QuantEdge*>& dropped);

}  // namespace ptq::sensitivity
